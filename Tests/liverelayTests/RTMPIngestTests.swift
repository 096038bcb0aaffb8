import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// The one-port RTMP ingest with real publishers (ffmpeg's RTMP client, as OBS and phone apps
/// speak it): many at once on one port, keys checked before any media, one publisher per stream,
/// and a publisher that drops and returns resumes the same stream.
@Suite(.ownThreads, .serialized) struct RTMPIngestTests {
    static func publisher(_ url: String, seconds: Int, extra: [String] = []) throws -> ChildProcess {
        try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", String(seconds),
                                             "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15"] + extra + ["-f", "flv", url])
    }

    /// The stream's status as the API shows it; nil when the answer is not a stream (no such
    /// stream: a refusal's `{"error": …}`).
    static func status(_ port: Int, _ stream: String) throws -> StreamStatus? {
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/\(stream)"], timeout: 10)
        return try? Servers.decode(StreamView.self, r.stdout).stream
    }

    @Test(.tags(.exclusive)) func tenPublishersOnOnePortAndTheWrongKeyIsRefused() throws {
        var yaml = "ingest:\n  rtmp: {listen: \"127.0.0.1:0\", publish_key: \"fleet-key\"}\nstreams:\n"
        for i in 1...10 { yaml += "  phone\(i): {source: publish, preview: false}\n" }
        yaml += "  own: {source: publish, publish_key: \"own-key\", preview: false}\n"
        let (serve, port, dir, rtmpPort) = try Servers.serve(yaml, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(serve.stdout.contains("RTMP ingest listening on rtmp://127.0.0.1:\(rtmpPort)/live/"), "\(serve.stdout)")
        let base = "rtmp://127.0.0.1:\(rtmpPort)/live"
        var publishers: [ChildProcess] = []
        defer { for p in publishers { p.stop() } }
        for i in 1...10 { publishers.append(try Self.publisher("\(base)/phone\(i)?key=fleet-key", seconds: 12)) }
        // OBS style: server rtmp://host:port/live, stream key "own?key=…" — the stream's own key.
        publishers.append(try Self.publisher("\(base)/own?key=own-key", seconds: 12))
        usleep(4_000_000)
        for i in 1...10 {
            let s = try Self.status(port, "phone\(i)")
            #expect(s?.state == .live && s?.codec == "h264", "phone\(i): \(String(describing: s))")
        }
        #expect(try Self.status(port, "own")?.state == .live)
        // A wrong key, a stream's key used for another stream, an unknown stream, a second
        // publisher of a live stream: each refused before any media, with the server's reason.
        for (url, why) in [("\(base)/phone1x?key=fleet-key", "no such stream"), ("\(base)/phone2?key=wrong", "wrong or missing key"),
                           ("\(base)/phone3?key=own-key", "wrong or missing key"), ("\(base)/phone4", "wrong or missing key"),
                           ("\(base)/phone5?key=fleet-key", "already publishing")] {
            let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", "3",
                                                             "-c:v", "libx264", "-f", "flv", url], timeout: 30)
            #expect(r.status != 0 && r.stderr.contains(why), "\(url): \(r.stderr)")
            #expect(!r.stderr.contains("fleet-key") || url.contains("fleet-key"))
        }
        // The refused ones did not disturb the live ones.
        #expect(try Self.status(port, "phone5")?.state == .live)
        #expect(!serve.stdout.contains("fleet-key") && !serve.stderr.contains("fleet-key") && !serve.stderr.contains("own-key"), "a key reached the log")
    }

    @Test func aFirstPublishCreatesItsStreamFromTheDefaults() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve("""
        ingest:
          rtmp: {listen: "127.0.0.1:0", publish_key: "fleet-key", auto_create: true}
          defaults: {preview: false, hls: {variant: mpegts, segment_duration: 1s}}
        streams:
          fixed: {source: "testsrc://?size=160x96&fps=10", preview: false}

        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "rtmp://127.0.0.1:\(rtmpPort)/live"
        let wrong = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", "2",
                                                             "-c:v", "libx264", "-f", "flv", "\(base)/newcam?key=nope"], timeout: 30)
        #expect(wrong.status != 0 && wrong.stderr.contains("wrong or missing key"), "\(wrong.stderr)")
        #expect(try Self.status(port, "newcam")?.state == nil, "a refused publisher made a stream")
        let publisher = try Self.publisher("\(base)/reporter7?key=fleet-key", seconds: 8)
        defer { publisher.stop() }
        usleep(4_500_000)
        let s = try Self.status(port, "reporter7")
        #expect(s?.state == .live, "\(String(describing: s))")
        let playlist = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/streams/reporter7/hls/index.m3u8"], timeout: 10).stdout
        #expect(playlist.contains("#EXTINF"), "the defaults' HLS is missing: \(playlist)")
    }

    /// A publisher whose metadata announces video alone is probed for its first frames only (a
    /// quick first picture) and still has its size; one that announces audio and video keeps
    /// both in the HLS it is republished as.
    @Test func announcedStreamsAreAllKeptAndAVideoOnlyPublisherHasItsSize() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve("""
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
        streams:
          video: {source: publish, preview: false}
          both: {source: publish, preview: false, hls: {variant: mpegts, segment_duration: 1s}}
        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "rtmp://127.0.0.1:\(rtmpPort)/live"
        let video = try Self.publisher("\(base)/video", seconds: 8)
        defer { video.stop() }
        let both = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
                                                        "-t", "8", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-c:a", "aac", "-f", "flv", "\(base)/both"])
        defer { both.stop() }
        usleep(4_500_000)
        let v = try Self.status(port, "video")
        #expect(v?.state == .live && v?.width == 160 && v?.height == 96, "\(String(describing: v))")
        let playlist = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/streams/both/hls/index.m3u8"], timeout: 10).stdout
        let seg = try #require(playlist.split(separator: "\n").first { $0.hasSuffix(".ts") }, "\(playlist)")
        let file = dir.appendingPathComponent("both.ts")
        _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", file.path, "http://127.0.0.1:\(port)/streams/both/hls/\(seg)"], timeout: 10)
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", file.path], timeout: 10)
        #expect(probe.stdout.contains("video") && probe.stdout.contains("audio"), "\(probe.stdout)")
    }

    @Test func aPublisherThatDropsAndReturnsResumesTheSameStream() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve("""
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
        streams:
          bodycam: {source: publish, preview: {fps: 10}}

        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let url = "rtmp://127.0.0.1:\(rtmpPort)/live/bodycam"
        // A viewer holds the preview open across the gap.
        let viewer = try ChildProcess("/usr/bin/curl", ["-sN", "-o", dir.appendingPathComponent("v.mjpg").path, "--max-time", "14",
                                                        "http://127.0.0.1:\(port)/streams/bodycam/preview.mjpg"])
        defer { viewer.stop() }
        let first = try Self.publisher(url, seconds: 3)
        #expect(first.wait(timeout: 20))
        usleep(1_000_000)
        let second = try Self.publisher(url, seconds: 4)
        defer { second.stop() }
        usleep(2_500_000)
        let s = try Self.status(port, "bodycam")
        #expect(s?.state == .live, "\(String(describing: s))")
        #expect((s?.connections ?? 0) >= 2, "the returning publisher resumed the same stream: \(String(describing: s))")
        #expect(viewer.exitStatus == nil, "the viewer was dropped across the publisher's gap")
    }

    /// A phone on a bad link drops and returns again and again: each return is live at once,
    /// not after a reconnect backoff that grew with every drop (it reached seconds by the fourth).
    @Test func aPublisherThatReturnsAgainAndAgainIsLiveAtOnceEachTime() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve("""
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
        streams:
          phone: {source: publish, preview: false}
        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        // A clip sent as it is (no encoder start-up in the way).
        let clip = dir.appendingPathComponent("clip.flv").path
        let made = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", "3",
                                                            "-c:v", "libx264", "-g", "15", "-f", "flv", clip], timeout: 30)
        try #require(made.status == 0, "\(made.stderr)")
        var waits: [Double] = []
        for round in 1...5 {
            let publisher = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-i", clip, "-c", "copy", "-f", "flv", "rtmp://127.0.0.1:\(rtmpPort)/live/phone"])
            let t0 = Date()
            var connections = 0
            while Date().timeIntervalSince(t0) < 8 {
                let s = try Self.status(port, "phone")
                connections = s?.connections ?? 0
                if s?.state == .live && connections == round { break }
                usleep(50_000)
            }
            waits.append(Date().timeIntervalSince(t0))
            #expect(connections == round, "round \(round): \(connections) connections")
            #expect(publisher.wait(timeout: 20))
        }
        // ffmpeg's own start and the stream's open take a fraction of a second; the fifth
        // return waited as long as the first.
        #expect(waits.allSatisfy { $0 < 2 }, "time to live after each return: \(waits)")
    }
}

/// HLS upload ingest, as phone reporter apps and `ffmpeg -f hls -method PUT` publish: the
/// uploaded segments become a stream like any other (here re-served as LL-HLS), only for users
/// allowed to publish.
@Suite(.ownThreads, .serialized) struct HLSUploadTests {
    @Test(.tags(.exclusive)) func uploadedSegmentsBecomeALiveStreamForPublishersOnly() throws {
        let hash = try AccessTests.hash("phone-pass")
        let (serve, port, dir) = try Servers.serve("""
        server: {listen: "127.0.0.1:0"}
        auth:
          users:
            - {name: phone, password: "\(hash)", permissions: [{action: publish, streams: "reporter"}, {action: read}]}
          anonymous: [read]
        streams:
          reporter: {source: publish, preview: {fps: 10}, hls: {variant: lowLatency, segment_duration: 1s, part_duration: 200ms}}
          other: {source: publish}

        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        func upload(_ url: String, seconds: Int) throws -> ChildProcess {
            try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", String(seconds),
                                                 "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "hls", "-hls_time", "1", "-method", "PUT", url])
        }
        // Without credentials, or for a stream the user may not publish: refused (ffmpeg's hls
        // muxer carries on past HTTP errors, so curl asks).
        func put(_ user: [String], _ path: String) throws -> String {
            try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "x"] + user
                                 + ["http://127.0.0.1:\(port)\(path)"], timeout: 10).stdout
        }
        #expect(try put([], "/ingest/reporter/index0.ts") == "401")
        #expect(try put(["-u", "phone:phone-pass"], "/ingest/other/index0.ts") == "403")
        #expect(try put(["-u", "phone:phone-pass"], "/ingest/nosuch/index0.ts") == "403")
        let phone = try upload("http://phone:phone-pass@127.0.0.1:\(port)/ingest/reporter/index.m3u8", seconds: 16)
        defer { phone.stop() }
        usleep(5_000_000)
        let api = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/reporter"], timeout: 10).stdout
        let reporter = try? Servers.decode(StreamView.self, api).stream
        #expect(reporter?.state == .live && reporter?.codec == "h264", "\(api.prefix(400))")
        // Re-served as LL-HLS: ffmpeg reads pictures from LiveRelay's playlist.
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", "http://127.0.0.1:\(port)/streams/reporter/hls/index.m3u8",
                                                         "-frames:v", "20", "-f", "null", "-"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        // And hls.js (low-latency mode) plays it on the stream's public page.
        let page = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                         "http://127.0.0.1:\(port)/streams/reporter/watch?via=hls", "--video", "video", "--seconds", "2"], timeout: 60)
        let line = page.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try? BrowserReport.decode(line)
        #expect(j?.started == true && (j?.advanced ?? 0) > 1 && j?.hlsjs != nil, "\(page.stdout) \(page.stderr.suffix(300))")
        #expect(!serve.stdout.contains("phone-pass") && !serve.stderr.contains("phone-pass"))
    }
}

/// Who may publish on the one-port ingest beyond keys: users with the publish permission, and
/// RTMPS (TLS with the server's certificate).
@Suite(.ownThreads, .serialized) struct RTMPIngestAccessTests {
    /// Users instead of keys: `?user=…&pass=…` opens a stream for a user with the publish
    /// permission on it; a reader, a wrong password or nothing is refused, and a stream with no
    /// key of its own is not open to anyone once there are users.
    /// Users for the publish tests: `pub` (password pub-secret-77) may publish phone*, `viewer`
    /// (viewer-secret-88) may only read; anonymous visitors read.
    static func publishUsers() throws -> String {
        let h = try ["pub": "pub-secret-77", "viewer": "viewer-secret-88"].mapValues { try AccessTests.hash($0) }
        return """
        auth:
          users:
            - {name: pub, password: "\(h["pub"]!)", permissions: [{action: publish, streams: "phone*"}]}
            - {name: viewer, password: "\(h["viewer"]!)", permissions: [read]}
          anonymous: [read]

        """
    }

    @Test func aUserWithThePublishPermissionPublishesWithoutAKey() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve(try Self.publishUsers() + """
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
        streams:
          phone1: {source: publish, preview: false}
          phone2: {source: publish, preview: false}
        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "rtmp://127.0.0.1:\(rtmpPort)/live"
        for (url, why) in [("\(base)/phone2", "wrong or missing key"), ("\(base)/phone2?user=viewer&pass=viewer-secret-88", "wrong or missing key"),
                           ("\(base)/phone2?user=pub&pass=nope", "wrong or missing key")] {
            let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", "3",
                                                             "-c:v", "libx264", "-f", "flv", url], timeout: 30)
            #expect(r.status != 0 && r.stderr.contains(why), "\(url): \(r.stderr)")
        }
        let publisher = try RTMPIngestTests.publisher("\(base)/phone1?user=pub&pass=pub-secret-77", seconds: 10)
        defer { publisher.stop() }
        var state: StreamState?
        let end = Date().addingTimeInterval(10)
        while Date() < end && state != .live {
            usleep(300_000)
            state = try RTMPIngestTests.status(port, "phone1")?.state
        }
        #expect(state == .live)
        #expect(try RTMPIngestTests.status(port, "phone2")?.state != .live)
        #expect(!serve.stdout.contains("pub-secret-77") && !serve.stderr.contains("pub-secret-77"), "a password reached the log")
    }

    @Test func rtmpsPublishersAreTakenAndPlainRTMPIsNot() throws {
        let dir = Paths.tempDirectory("rtmps")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cert, key) = try Servers.selfSignedCertificate(in: dir)
        let (serve, port, serveDir, rtmpPort) = try Servers.serve("""
        server:
          tls: {cert: \(cert), key: \(key)}
        ingest:
          rtmp: {listen: "127.0.0.1:0", publish_key: "fleet-key", tls: true}
        streams:
          phone1: {source: publish, preview: false}
        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: serveDir) }
        #expect(serve.stdout.contains("RTMP ingest listening on rtmps://127.0.0.1:\(rtmpPort)/live/"), "\(serve.stdout)")
        // Plain RTMP to the TLS port: no handshake, no stream.
        let plain = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "10", "/usr/bin/ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15",
                                                              "-t", "2", "-c:v", "libx264", "-f", "flv", "rtmp://127.0.0.1:\(rtmpPort)/live/phone1?key=fleet-key"], timeout: 20)
        #expect(plain.status != 0, "plain RTMP was taken on the RTMPS port")
        // RTMPS (ffmpeg's TLS client; the test certificate is self-signed, ffmpeg does not verify by default).
        let publisher = try RTMPIngestTests.publisher("rtmps://127.0.0.1:\(rtmpPort)/live/phone1?key=fleet-key", seconds: 10)
        defer { publisher.stop() }
        var s: StreamStatus?
        let end = Date().addingTimeInterval(12)
        while Date() < end {
            usleep(300_000)
            // The HTTP side is HTTPS now.
            let r = try ChildProcess.run("/usr/bin/curl", ["-s", "--cacert", cert, "https://127.0.0.1:\(port)/api/streams/phone1"], timeout: 10)
            s = try? Servers.decode(StreamView.self, r.stdout).stream
            if s?.state == .live { break }
        }
        #expect(s?.state == .live && s?.codec == "h264", "\(String(describing: s)) \(publisher.stderr.suffix(300))")
    }
}
