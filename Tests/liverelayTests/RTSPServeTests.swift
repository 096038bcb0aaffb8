import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// Every stream re-served over RTSP (`server.rtsp.listen`), read by real clients: ffmpeg and
/// GStreamer's rtspsrc over TCP (interleaved) and UDP, the stamped pictures read back from what
/// they received; `read` permission checked (401, 403) before any media.
@Suite(.ownThreads, .serialized) struct RTSPServeTests {
    static let camera = "testsrc://?size=640x360&fps=30&gop=30"

    static func start(_ extra: String = "") throws -> (serve: ChildProcess, http: Int, rtsp: Int, dir: URL) {
        let (serve, port, dir) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        \(extra)
        streams:
          cam:
            source: \(camera)
            preview: false
          other:
            source: testsrc://?size=320x180&fps=15&gop=15
            preview: false
        """)
        guard let rtspPort = serve.listeningPort("RTSP server listening on", timeout: 30) else {
            serve.stop()
            throw Servers.ServerError("no RTSP server: \(serve.stdout) \(serve.stderr)")
        }
        return (serve, port, rtspPort, dir)
    }

    /// Frames ffmpeg decodes from the URL in `seconds`, and its stderr.
    static func ffmpegFrames(_ url: String, transport: String, seconds: Int = 3) throws -> (Int, String) {
        let r = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error", "-rtsp_transport", transport,
                                                          "-i", url, "-t", String(seconds), "-f", "framemd5", "-"], timeout: 30)
        return (r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count, r.stderr)
    }

    /// `liverelay probe --json`'s report; nil when it gave none (`said`: what it said instead).
    struct Probed: CustomStringConvertible {
        var report: ProbeReport?
        var said: String
        var description: String { report.map { "\($0)" } ?? "no report: \(said)" }
    }

    static func probe(_ url: String, transport: String) throws -> Probed {
        let r = try ChildProcess.run(Paths.liverelay, ["probe", url, "--transport", transport, "--frames", "60", "--json"], timeout: 30)
        return Probed(report: try? Servers.decode(ProbeReport.self, r.stdout), said: r.stderr)
    }

    /// scripts/rtsp_udp_client.py's JSON line (`error`: what it said when it printed none).
    struct UDPClientResult: Decodable {
        var total: Int?
        var recent: Int?
        var closed: Bool?
        var error: String?
    }

    @Test func ffmpegAndGStreamerReadEveryStreamOverTCPAndUDP() throws {
        let (serve, port, rtspPort, dir) = try Self.start()
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let url = "rtsp://127.0.0.1:\(rtspPort)/cam"
        for transport in ["tcp", "udp"] {
            let (frames, err) = try Self.ffmpegFrames(url, transport: transport)
            #expect(frames >= 80, "ffmpeg over \(transport): \(frames) frames in 3 s; \(err.suffix(400))")
            // The stamped pictures come through whole: every one read back, capture → decoded measured.
            let p = try Self.probe(url, transport: transport)
            #expect(p.report?.stampsRead == 60 && p.report?.codec == "h264" && p.report?.width == 640, "\(transport): \(p)")
            #expect((p.report?.latencyP50Ms ?? 1e9) < 1000, "\(transport): \(p)")
        }
        // The second stream too, at its own size.
        let small = try Self.probe("rtsp://127.0.0.1:\(rtspPort)/other", transport: "tcp")
        #expect(small.report?.width == 320 && small.report?.stampsRead == 60, "\(small)")

        // GStreamer's rtspsrc, both transports: it records what it received, which is read back.
        for transport in ["tcp", "udp"] {
            let out = dir.appendingPathComponent("gst-\(transport).ts")
            let g = try ChildProcess.run("/usr/bin/timeout", ["-s", "INT", "-k", "3", "5", "/usr/bin/gst-launch-1.0", "-e", "rtspsrc", "location=\(url)",
                                                              "protocols=\(transport)", "latency=100", "!", "rtph264depay", "!", "h264parse", "!",
                                                              "mpegtsmux", "!", "filesink", "location=\(out.path)"], timeout: 20)
            let p = try Self.probe(out.path, transport: "auto")
            #expect((p.report?.stampsRead ?? 0) == 60 && p.report?.width == 640, "GStreamer over \(transport): \(p); \(g.output.suffix(400))")
        }

        // Each playing client is an output of its stream, listed by the API, gone when it leaves.
        let reader = try ChildProcess("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", url,
                                                            "-t", "4", "-f", "null", "-"])
        defer { reader.stop() }
        // Listed once it plays (side by side with other tests, ffmpeg may take a while to start).
        var sinks: [OutputStatus] = []
        let listedBy = Date().addingTimeInterval(10)
        repeat {
            usleep(250_000)
            let api = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 10).stdout
            sinks = (try? Servers.decode(StreamView.self, api))?.sinks ?? []
        } while Date() < listedBy && !sinks.contains(where: { $0.kind == .rtsp && $0.counters.delivered > 30 })
        let rtsp = sinks.filter { $0.kind == .rtsp }
        #expect(rtsp.count == 1 && (rtsp.first?.counters.delivered ?? 0) > 30, "\(sinks)")
        #expect(reader.wait(timeout: 20))
        usleep(500_000)
        let after = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 10).stdout
        let afterView = try #require(try? Servers.decode(StreamView.self, after), "\(after.prefix(600))")
        #expect(!afterView.sinks.contains { $0.kind == .rtsp }, "the client left but its output stayed")
    }

    /// VLC as Debian ships it (no live555): its `rtsp://` handler is the SAT>IP module, which
    /// sends SETUP on the URL with no DESCRIBE and reads RTP as MPEG-TS. It gets the stream in
    /// one transport stream; what it recorded is read back, every picture's stamp.
    @Test func vlcWithoutLive555ReadsTheStreamAsMPEGTS() throws {
        let (serve, port, rtspPort, dir) = try Self.start()
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(dir.path, 0o755)
        let file = vlcDir.appendingPathComponent("cam.ts").path
        // VLC refuses to run as root: as nobody, as a user would.
        let vlc = try ChildProcess("/usr/bin/timeout", ["-k", "1", "30", "/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/cvlc", "-vv", "--play-and-exit",
                                                        "--run-time=4", "rtsp://127.0.0.1:\(rtspPort)/cam", "--sout", "#std{access=file,mux=ts,dst=\(file)}"])
        defer { vlc.stop() }
        usleep(2_500_000)
        // While it plays, it is an output of the stream like any RTSP client.
        let api = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 10).stdout
        #expect(api.contains("\"kind\":\"rtsp\""), "\(api.prefix(600))")
        #expect(vlc.wait(timeout: 30))
        #expect((vlc.stdout + vlc.stderr).contains("using access module \"satip\"") && (vlc.stdout + vlc.stderr).contains("using demux module \"ts\""), "\((vlc.stdout + vlc.stderr).suffix(600))")
        #expect(!(vlc.stdout + vlc.stderr).contains("main input error"), "\((vlc.stdout + vlc.stderr).suffix(600))")
        let frames = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v", "-show_entries", "stream=nb_read_packets",
                                                              "-of", "default=nw=1:nk=1", file], timeout: 20)
        #expect((frames.stdout.split(separator: "\n").first.flatMap { Int($0) } ?? 0) >= 75, "VLC wrote \(frames.output)")
        let p = try Self.probe(file, transport: "auto")
        #expect(p.report?.stampsRead == 60 && p.report?.width == 640 && p.report?.corruptFrames == 0, "\(p)")

        // The module lowercases the URL: a name in another case finds the one stream it means,
        // and the answer says where PLAY goes (no SDP was seen).
        let setup = try Self.rawRequest(rtspPort, "SETUP rtsp://127.0.0.1:\(rtspPort)/CAM RTSP/1.0\r\nCSeq: 0\r\nTransport: RTP/AVP;unicast;client_port=9000-9001\r\n\r\n")
        #expect(setup.hasPrefix("RTSP/1.0 200") && setup.contains("Content-Base: rtsp://127.0.0.1:\(rtspPort)/CAM/"), "\(setup)")
    }

    @Test func readingNeedsTheReadPermissionAndNoPasswordIsLogged() throws {
        let pw = ["ops": "rtsp-ops-secret-1", "lobby": "rtsp-lobby-secret-2"]
        let h = try pw.mapValues { try AccessTests.hash($0) }
        let (serve, _, rtspPort, dir) = try Self.start("""
        auth:
          users:
            - {name: ops, password: "\(h["ops"]!)", permissions: [{action: read, streams: cam}]}
            - {name: lobby, password: "\(h["lobby"]!)", permissions: [{action: read, streams: other}]}
          anonymous: []
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        // Anonymous: 401 with a Basic challenge, no media.
        let anon = try Self.rawRequest(rtspPort, "DESCRIBE rtsp://127.0.0.1:\(rtspPort)/cam RTSP/1.0\r\nCSeq: 1\r\n\r\n")
        #expect(anon.hasPrefix("RTSP/1.0 401") && anon.contains("WWW-Authenticate: Basic"), "\(anon)")
        // Wrong password: 401; a reader of another stream: 403.
        let (wrong, wrongErr) = try Self.ffmpegFrames("rtsp://ops:nope@127.0.0.1:\(rtspPort)/cam", transport: "tcp", seconds: 1)
        #expect(wrong == 0 && wrongErr.contains("401"), "\(wrongErr)")
        let (foreign, foreignErr) = try Self.ffmpegFrames("rtsp://lobby:\(pw["lobby"]!)@127.0.0.1:\(rtspPort)/cam", transport: "tcp", seconds: 1)
        #expect(foreign == 0 && foreignErr.contains("403"), "\(foreignErr)")
        // The reader of the stream plays it, over both transports.
        for transport in ["tcp", "udp"] {
            let (frames, err) = try Self.ffmpegFrames("rtsp://ops:\(pw["ops"]!)@127.0.0.1:\(rtspPort)/cam", transport: transport, seconds: 2)
            #expect(frames >= 50, "\(transport): \(frames) frames; \(err.suffix(300))")
        }
        // A stream that does not exist is a 404 for whoever may read it … and the same 403 for others.
        let missing = try Self.rawRequest(rtspPort, "DESCRIBE rtsp://127.0.0.1:\(rtspPort)/nope RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic \(Data("ops:\(pw["ops"]!)".utf8).base64EncodedString())\r\n\r\n")
        #expect(missing.hasPrefix("RTSP/1.0 403"), "\(missing)")
        for secret in pw.values { #expect(!serve.stdout.contains(secret) && !serve.stderr.contains(secret), "a password reached the log") }
    }

    @Test func garbageAndHostileRequestsGetAnAnswerAndTheServerStays() throws {
        let (serve, _, rtspPort, dir) = try Self.start()
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        for junk in ["\u{1}\u{2}garbage\r\n\r\n", "DESCRIBE rtsp://127.0.0.1/../../etc/passwd RTSP/1.0\r\nCSeq: 1\r\n\r\n",
                     "SETUP rtsp://127.0.0.1/cam/streamid=99 RTSP/1.0\r\nCSeq: 2\r\nTransport: RTP/AVP;multicast\r\n\r\n",
                     "PLAY rtsp://127.0.0.1/cam RTSP/1.0\r\nCSeq: 3\r\nSession: 1234\r\n\r\n",
                     "OPTIONS * RTSP/1.0\r\nCSeq: 4\r\nContent-Length: 999999999\r\n\r\n",
                     String(repeating: "A", count: 40_000)] {
            let answer = try Self.rawRequest(rtspPort, junk)
            #expect(answer.isEmpty || answer.hasPrefix("RTSP/1.0 4"), "\(junk.prefix(60)) → \(answer.prefix(200))")
        }
        let (frames, err) = try Self.ffmpegFrames("rtsp://127.0.0.1:\(rtspPort)/cam", transport: "tcp", seconds: 1)
        #expect(frames >= 20, "after the garbage: \(frames) frames; \(err.suffix(300))")
    }

    /// A UDP client that vanishes (no request, no receiver report) is dropped after the session
    /// timeout, and nothing more is sent to it; one that sends receiver reports stays served
    /// without a request.
    @Test func aSilentUDPClientIsDroppedAfterTheSessionTimeout() throws {
        let (serve, _, dir, rtspPort) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0", session_timeout: 2s}
        streams:
          cam: {source: "testsrc://?size=320x180&fps=30&gop=30", preview: false}
        """, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = Paths.packageRoot.appendingPathComponent("scripts/rtsp_udp_client.py").path
        let silent = try ChildProcess(Servers.python, [script, String(rtspPort), "cam", "8", "silent"])
        let reporting = try ChildProcess(Servers.python, [script, String(rtspPort), "cam", "8", "rtcp"])
        #expect(silent.wait(timeout: 30) && reporting.wait(timeout: 30))
        func result(_ p: ChildProcess) -> RTSPServeTests.UDPClientResult {
            let line = p.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
            return (try? JSONDecoder().decode(RTSPServeTests.UDPClientResult.self, from: Data(line.utf8))) ?? RTSPServeTests.UDPClientResult(error: p.stderr)
        }
        let s = result(silent), r = result(reporting)
        #expect((s.total ?? 0) > 20 && s.closed == true && s.recent == 0, "silent client: \(s)")
        #expect(r.closed == false && (r.recent ?? 0) > 20, "reporting client: \(r)")
    }

    @Test func anRTSPPortBeyondLoopbackNeedsAuth() throws {
        let dir = Paths.tempDirectory("rtsp-exposed")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("config.yaml")
        try "server:\n  rtsp: {listen: \"0.0.0.0:\(FreePort.tcp())\"}\nstreams:\n  cam: {source: \"\(Self.camera)\"}\n".write(to: file, atomically: true, encoding: .utf8)
        let r = try ChildProcess.run(Paths.liverelay, ["serve", "--config", file.path, "--listen", "127.0.0.1:\(FreePort.tcp())", "--state-dir", file.deletingLastPathComponent().path], timeout: 20)
        #expect(r.status == 2 && r.stderr.contains("auth") && r.stderr.contains("server.rtsp.listen"), "\(r.status) \(r.stderr)")
    }

    /// Sends `text` on a new connection and returns what came back within a second.
    static func rawRequest(_ port: Int, _ text: String) throws -> String {
        let script = """
        import socket, sys, time
        s = socket.create_connection(("127.0.0.1", \(port)), timeout=5)
        try:
            s.sendall(bytes.fromhex(sys.argv[1]))
        except OSError:
            pass
        data = b""
        end = time.time() + 1.5
        while time.time() < end:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        sys.stdout.write(data.decode("utf-8", "replace"))
        """
        let hex = text.utf8.map { String(format: "%02x", $0) }.joined()
        let r = try ChildProcess.run(Servers.python, ["-c", script, hex], timeout: 15)
        return r.stdout
    }
}
