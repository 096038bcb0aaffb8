/// Why a socket call or an exchange of LiveRelay's own RTSP client ended. Mapped to
/// `IngestError` by the source (`RTSPSource.fail`).
enum WireError: Error {
    /// Refused, no route, name not found.
    case unreachable(String)
    case timedOut
    case stopped
    /// The server closed the connection.
    case closed
    /// The server answered with an error status (`404 Not Found`).
    case status(Int, String)
    /// The server's bytes made no sense.
    case invalid(String)
    case failed(String)
    /// Something LiveRelay's own client does not take (FFmpeg's RTSP demuxer is used instead).
    case unsupported(String)
}
