import Testing

extension Tag {
    /// Starts no process and no server (no ffmpeg or ffprobe, gst-rtsp-server, Python, nginx,
    /// PostgreSQL, mount, browser or `liverelay`): `scripts/test.sh --fast` runs the tests with
    /// this tag, and only those, and fails if one of them starts a process. A tag is its name,
    /// so each test target declares it (not every target sees TestSupport).
    @Tag static var fast: Self
}
