import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// A hostile camera (`scripts/hostile/camera.py`, a separate process over real sockets) against
/// the real `liverelay serve`: the process survives, a good stream beside it stays live.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct HostileCameraTests {
    static let script = Paths.packageRoot.appendingPathComponent("scripts/hostile/camera.py").path

    static func camera(port: Int, _ args: [String]) throws -> ChildProcess {
        let c = try ChildProcess(Servers.python, [script, "--port", String(port)] + args)
        guard c.waitFor("ready", timeout: 20) else { c.stop(); throw Servers.ServerError("hostile camera did not start: \(c.stderr)") }
        return c
    }

    /// A hostile peer's seed: `LIVERELAY_HOSTILE_SEED` (to replay a failure), else a new one.
    static var seed: Int { ProcessInfo.processInfo.environment["LIVERELAY_HOSTILE_SEED"].flatMap(Int.init) ?? Int.random(in: 1...1_000_000) }

    static func states(_ port: Int) -> [String: String] {
        guard let list = Servers.apiIfAny([StreamView].self, "http://127.0.0.1:\(port)/api/streams", maxTime: 5) else { return [:] }
        var out: [String: String] = [:]
        for entry in list { out[entry.stream.name] = entry.stream.state.rawValue }
        return out
    }

    static func waitLive(_ port: Int, _ name: String, timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if states(port)[name] == "live" { return true }
            usleep(100_000)
        }
        return false
    }

    /// A hostile publisher script (`scripts/hostile/NAME`) against an ingest port, publishing to
    /// `stream`; expects serve to outlive it with the stream `good` live, and returns how many
    /// exchanges it made.
    static func publishHostile(_ name: String, port: Int, stream: String, seed: Int, exchanges: Int, serve: ChildProcess, http: Int,
                               arguments: [String] = []) throws -> Int {
        let script = Paths.packageRoot.appendingPathComponent("scripts/hostile/\(name)").path
        let peer = try ChildProcess.run(Servers.python, [script, "--port", String(port), "--stream", stream, "--seed", String(seed), "--exchanges", String(exchanges)] + arguments,
                                        timeout: 150)
        #expect(serve.exitStatus == nil, "seed \(seed): serve stopped; \(name) sent:\n\(peer.stdout.suffix(4000))\n\(serve.stderr.suffix(3000))\n\(peer.stderr.suffix(500))")
        #expect(states(http)["good"] == "live")
        return peer.stdout.split(separator: "\n").filter { $0.hasPrefix("exchange ") }.count
    }

    /// ffmpeg publishes 8 s of a test pattern (`format`: flv, mpegts) to `url`, whose stream
    /// `other` must go live within 10 s.
    static func expectARealPublisherGoesLive(format: String, url: String, http: Int, seed: Int) throws {
        let ffmpeg = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=15", "-t", "8",
                                                          "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-f", format, url])
        defer { ffmpeg.stop() }
        #expect(waitLive(http, "other", timeout: 10), "seed \(seed)")
    }

    /// Issue 26: `Session: x;timeout=1e20` (or empty, inf, nan) stopped the whole process with
    /// a trap. Now the unusable timeout is left out with one warning line (the default
    /// keep-alive applies) and the camera plays.
    @Test(arguments: ["1e20", "", "inf", "nan"])
    func anUnusableSessionTimeoutStopsNothing(_ timeout: String) throws {
        let cport = FreePort.tcp()
        let cam = try Self.camera(port: cport, ["--session-timeout", timeout])
        defer { cam.stop() }
        let (serve, port, dir) = try Servers.serve("""
        streams:
          good: {source: "testsrc://?size=320x240&fps=15", preview: false}
          cam: {source: "rtsp://127.0.0.1:\(cport)/cam", transport: tcp, preview: false}
          camudp: {source: "rtsp://127.0.0.1:\(cport)/cam", transport: udp, preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(Self.waitLive(port, "cam", timeout: 10), "\(serve.stderr.suffix(2000))")
        #expect(Self.waitLive(port, "camudp", timeout: 10), "\(serve.stderr.suffix(2000))")
        #expect(serve.exitStatus == nil, "serve stopped: \(serve.stderr.suffix(2000))")
        #expect(Self.states(port)["good"] == "live")
        // One line says what was wrong with the camera's answer.
        #expect((serve.stdout + serve.stderr).contains("Session timeout is not usable"), "\(serve.stderr.suffix(2000))")
    }

    /// A camera mutating every field of its answers and media from a seed, in H.264 and H.265:
    /// the process and the good stream beside it run on. The camera prints what it sent, so a failure replays with
    /// `scripts/hostile/camera.py --seed N --mutate 0.3`.
    @Test func aMutatingCameraCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let cport = FreePort.tcp()
        let cam = try Self.camera(port: cport, ["--seed", String(seed), "--mutate", "0.25", "--play-seconds", "0.4", "--hangup", "silent"])
        defer { cam.stop() }
        var yaml = "streams:\n  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}\n"
        // Two of the four take H.265 (RFC 7798's units mutated like H.264's).
        // The H.264 two ask for the ONVIF backchannel (talk: true): its section and SETUP mutated too.
        for i in 0..<4 { yaml += "  cam\(i): {source: \"rtsp://127.0.0.1:\(cport)/\(i >= 2 ? "h265" : "")cam\(i)\", transport: \(i % 2 == 0 ? "tcp" : "udp"), open_timeout: 2s, read_timeout: 1s, preview: false, talk: \(i < 2)}\n" }
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        Thread.sleep(forTimeInterval: 20)
        let exchanges = cam.stdout.split(separator: "\n").filter { $0.hasPrefix("exchange ") }.count
        print("hostile camera seed \(seed): \(exchanges) exchanges in 20 s")
        #expect(serve.exitStatus == nil, "seed \(seed): serve stopped; the camera sent:\n\(cam.stdout.suffix(4000))\n\(serve.stderr.suffix(3000))")
        #expect(Self.states(port)["good"] == "live", "seed \(seed)")
        #expect(exchanges >= 20, "seed \(seed): only \(exchanges) mutated exchanges in 20 s")
    }

    /// A camera opens its port before it serves (DESCRIBE stalls, or is refused 503): LiveRelay
    /// is live again within a second of it serving, after short and long outages.
    @Test(arguments: [("stall", 2.0), ("stall", 12.0), ("503", 2.0), ("503", 12.0)])
    func aBootingCameraIsLiveWithinASecondOfServing(_ mode: String, _ outage: Double) throws {
        let cport = FreePort.tcp()
        var cam = try Self.camera(port: cport, [])
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "rtsp://127.0.0.1:\(cport)/cam", transport: tcp, read_timeout: 1s, preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(Self.waitLive(port, "cam", timeout: 15))
        cam.stop()
        Thread.sleep(forTimeInterval: outage)
        #expect(!Self.waitLive(port, "cam", timeout: 0.1))
        cam = try Self.camera(port: cport, ["--boot-delay", "2", "--boot-mode", mode])
        defer { cam.stop() }
        let serving = Date().addingTimeInterval(2)
        #expect(Self.waitLive(port, "cam", timeout: 10))
        let after = Date().timeIntervalSince(serving)
        print("booting camera (\(mode), outage \(outage) s): live \(String(format: "%.2f", after)) s after it served")
        #expect(after <= 1.0, "live \(after) s after the camera served; \(serve.stderr.suffix(2000))")
    }
}

/// A hostile RTSP player (`scripts/hostile/rtsp_player.py`) against the real serve's RTSP
/// server: mutated requests, transports, sessions and interleaved frames. The process survives
/// and a real client still reads the stream.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct HostileRTSPPlayerTests {
    @Test func aMutatingPlayerCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let (serve, port, dir, rtsp) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        streams:
          cam: {source: "testsrc://?size=320x240&fps=15", preview: false}
        """, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = Paths.packageRoot.appendingPathComponent("scripts/hostile/rtsp_player.py").path
        let player = try ChildProcess.run(Servers.python, [script, "--port", String(rtsp), "--seed", String(seed), "--exchanges", "150",
                                                           "--read-seconds", "0.1"], timeout: 120)
        let exchanges = player.stdout.split(separator: "\n").filter { $0.hasPrefix("exchange ") }.count
        #expect(serve.exitStatus == nil, "seed \(seed): serve stopped; the player sent:\n\(player.stdout.suffix(4000))\n\(serve.stderr.suffix(3000))")
        #expect(exchanges >= 100, "seed \(seed): \(exchanges) exchanges")
        #expect(HostileCameraTests.states(port)["cam"] == "live")
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                                             "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/cam"], timeout: 20)
        #expect(probe.stdout.contains("h264"), "seed \(seed): \(probe.stderr)")
    }
}

/// A hostile HTTP and WebSocket client (`scripts/hostile/http_client.py`) against the real
/// serve: the API, HLS and LL-HLS queries, HLS uploads, pages and the wall's socket. The process
/// survives, the good stream (which the client never names; `cam` it may replace or delete, as
/// the API allows on loopback without auth) stays live, and its LL-HLS is still served.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct HostileHTTPClientTests {
    @Test func aMutatingHTTPClientCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let dir = Paths.tempDirectory("hostile-http")
        // `good` is also recorded: the archive's routes have something to find, play and export.
        let (serve, port, _) = try Servers.serve("""
        streams:
          good: {source: "testsrc://?size=320x240&fps=15", preview: false, hls: {variant: lowLatency}, record: {path: "\(dir.path)/rec", segment_duration: 2s}}
          cam: {source: "testsrc://?size=320x240&fps=15", hls: {variant: lowLatency}}
          phone: {source: publish}
        """, dir: dir)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = Paths.packageRoot.appendingPathComponent("scripts/hostile/http_client.py").path
        let client = try ChildProcess.run(Servers.python, [script, "--port", String(port), "--seed", String(seed), "--exchanges", "300"], timeout: 150)
        let exchanges = client.stdout.split(separator: "\n").filter { $0.hasPrefix("exchange ") }.count
        #expect(serve.exitStatus == nil, "seed \(seed): serve stopped; the client sent:\n\(client.stdout.suffix(4000))\n\(serve.stderr.suffix(3000))")
        #expect(exchanges >= 250, "seed \(seed): \(exchanges) exchanges")
        #expect(HostileCameraTests.states(port)["good"] == "live")
        let hls = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "http://127.0.0.1:\(port)/streams/good/hls/index.m3u8"], timeout: 15)
        #expect(hls.stdout.hasPrefix("#EXTM3U"), "seed \(seed): \(hls.stdout.prefix(200))")
        // The archive still plays.
        let archive = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "http://127.0.0.1:\(port)/streams/good/recording.m3u8"], timeout: 15)
        #expect(archive.stdout.hasPrefix("#EXTM3U"), "seed \(seed): \(archive.stdout.prefix(200))")
        // Incidents still work: one made over the last seconds exports a bundle that proves itself.
        let iso = ISO8601DateFormatter()
        let body = "{\"title\": \"after\", \"streams\": [\"good\"], \"start\": \"\(iso.string(from: Date().addingTimeInterval(-8)))\", \"end\": \"\(iso.string(from: Date().addingTimeInterval(-3)))\"}"
        let made = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "-H", "Content-Type: application/json", "--data-binary", body,
                                                         "http://127.0.0.1:\(port)/api/incidents"], timeout: 15)
        let incident = try Servers.decode(Incident.self, made.stdout)
        let bundle = dir.appendingPathComponent("after.tar").path
        _ = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "20", "-o", bundle, "http://127.0.0.1:\(port)/api/incidents/\(incident.id)/export"], timeout: 25)
        let key = try #require(try Servers.api(NodeKeys.self, "http://127.0.0.1:\(port)/api/keys").keys.first?.publicKey)
        let verified = try ChildProcess.run(Paths.liverelay, ["recordings", "verify-export", bundle, "--key", key], timeout: 30)
        #expect(verified.status == 0, "seed \(seed): \(verified.output)")
    }
}

/// A hostile RTMP publisher (`scripts/hostile/rtmp_publisher.py`) against the real serve's
/// one-port ingest: after a valid handshake, mutated chunk headers, AMF0 commands and FLV tags.
/// The process survives, the good stream stays live, and a real publisher still goes live.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct HostileRTMPPublisherTests {
    @Test func aMutatingPublisherCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let (serve, port, dir, rtmp) = try Servers.serve("""
        ingest:
          rtmp: {listen: "127.0.0.1:0", app: live}
        streams:
          good: {source: "testsrc://?size=320x240&fps=15", preview: false}
          phone: {source: publish, hls: {variant: fmp4}}
          other: {source: publish, preview: false}
        """, listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let exchanges = try HostileCameraTests.publishHostile("rtmp_publisher.py", port: rtmp, stream: "phone", seed: seed, exchanges: 120, serve: serve, http: port)
        #expect(exchanges >= 100, "seed \(seed): \(exchanges) exchanges")
        // A real publisher still gets in.
        try HostileCameraTests.expectARealPublisherGoesLive(format: "flv", url: "rtmp://127.0.0.1:\(rtmp)/live/other", http: port, seed: seed)
    }
}

/// A hostile SRT caller (`scripts/hostile/srt_caller.py`: ffmpeg's libsrt caller sending raw,
/// mutated MPEG-TS under stream IDs at their extremes, and readers of the good stream that stop
/// reading, leave in the handshake or mangle their IDs) against the real serve's one SRT port.
/// The process survives, the good stream stays live, a real caller still goes live and a real
/// reader still reads every stamped picture.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct HostileSRTCallerTests {
    @Test func aMutatingCallerCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let (serve, port, dir, srt) = try Servers.serve("""
        ingest:
          srt: {listen: "127.0.0.1:0"}
        streams:
          good: {source: "testsrc://?size=320x240&fps=15", preview: false}
          cam: {source: publish, hls: {variant: mpegts}}
          other: {source: publish, preview: false}
        """, listener: "SRT ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let exchanges = try HostileCameraTests.publishHostile("srt_caller.py", port: srt, stream: "cam", seed: seed, exchanges: 60, serve: serve, http: port,
                                                              arguments: ["--read-stream", "good"])
        #expect(exchanges == 60, "seed \(seed): \(exchanges) exchanges")
        try HostileCameraTests.expectARealPublisherGoesLive(format: "mpegts", url: "srt://127.0.0.1:\(srt)?streamid=other", http: port, seed: seed)
        let file = dir.appendingPathComponent("read.ts")
        _ = try SRTReadTests.ffmpegRead("srt://127.0.0.1:\(srt)?streamid=read:good", to: file, seconds: 5)
        let read = try SRTReadTests.probeFile(file.path)
        #expect(read.report?.stampsRead == 60, "seed \(seed): a real reader after the hostile ones: \(read)")
    }
}
