import Testing
import Foundation
import TestSupport
import Bench

/// The ops wall in headless Chromium: every camera over one WebSocket, H.264 decoded by the
/// page (WebCodecs), JPEG where the codec is not H.264, and the slate when a camera is lost.
@Suite(.serialized) struct WallTests {
    static func browser(_ url: String, seconds: Int, size: String = "1700x1300") throws -> ChildProcess {
        try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, url,
                                          "--wall", "--seconds", String(seconds), "--size", size])
    }

    static func summary(_ browser: ChildProcess) throws -> [String: [String: Any]] {
        let line = try #require(browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") }, "\(browser.stdout) \(browser.stderr.suffix(800))")
        let j = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let wall = try #require(j["wall"] as? [String: Any], "\(line)")
        return try #require(wall["tiles"] as? [String: [String: Any]], "\(line)")
    }

    @Test func sixteenTilesPlayAndALostCameraShowsTheSlate() throws {
        let dir = Paths.tempDirectory("wall")
        defer { try? FileManager.default.removeItem(at: dir) }
        // One H.265 source: Chromium's WebCodecs has no hvc1 here, so its tile takes JPEG.
        let hevc = dir.appendingPathComponent("hevc.ts")
        let made = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=15", "-t", "4",
                                                            "-c:v", "libx265", "-x265-params", "keyint=15:log-level=error", "-pix_fmt", "yuv420p", hevc.path], timeout: 120)
        #expect(made.status == 0, "\(made.stderr)")
        let camPort = FreePort.tcp()
        var camera = try Servers.RTSP(port: camPort)
        var yaml = """
        streams:
          cam:
            source: rtsp://127.0.0.1:\(camPort)/test
            transport: tcp
            read_timeout: 1s
          hevc:
            source: \(hevc.path)
            realtime: true
            loop: true
            preview: {size: 320x180, fps: 10}

        """
        for i in 1...14 {
            yaml += "  t\(String(format: "%02d", i)):\n    source: testsrc://?size=160x96&fps=10&gop=10\n"
        }
        let (serve, port, sdir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: sdir) }
        let browser = try Self.browser("http://127.0.0.1:\(port)/", seconds: 28)
        defer { browser.stop() }
        #expect(browser.waitFor("watching", timeout: 30), "\(browser.stderr.suffix(500))")
        #expect(browser.waitFor("painting cam", timeout: 15), "\(browser.stdout)")
        usleep(1_000_000)
        // The camera dies: its tile shows the slate within 2 s.
        let killing = Date()
        camera.child.kill()
        let killed = Date()
        #expect(browser.waitFor("signal cam lost", timeout: 6), "\(browser.stdout)")
        // Measured from the moment the camera was told to stop (SIGKILL: it loses power).
        let shown = Date().timeIntervalSince(killing)
        print("wall: the slate showed \(shown) s after the camera was stopped (stopping took \(killed.timeIntervalSince(killing)) s)")
        #expect(shown < 2.0, "signal lost shown \(shown) s after the camera was stopped")
        // It returns: the tile is live again.
        camera = try Servers.RTSP(port: camPort)
        #expect(browser.waitFor("signal cam ok", timeout: 15), "\(browser.stdout)")
        #expect(browser.wait(timeout: 60))
        let tiles = try Self.summary(browser)
        #expect(tiles.count == 16)
        for (name, t) in tiles {
            #expect((t["changes"] as? Int ?? 0) >= 3, "tile \(name) hardly changed: \(t)")
            #expect(t["path"] as? String == (name == "hevc" ? "jpeg" : "h264"), "tile \(name): \(t)")
        }
        // The stamped test sources' tiles measure capture → screen.
        let t01 = try #require(tiles["t01"])
        #expect(t01["latency_kind"] as? String == "capture → screen", "\(t01)")
        #expect((t01["latency_p50"] as? Double ?? 1e9) < 1000, "\(t01)")
        _ = camera
    }

    /// A viewer on a thin link (500 kbit/s, reading no faster, small receive buffer) of a
    /// 2 Mbit/s camera keeps a bounded delay by skipping to keyframes, counted, while a second
    /// viewer of the same stream gets every frame at once and the source's full bitrate.
    @Test func aThrottledViewerSkipsToKeyframesAndTheOtherIsUnaffected() throws {
        let camera = try Servers.RTSP(mounts: ["/snow=( videotestsrc is-live=true pattern=snow ! video/x-raw,width=640,height=360,framerate=30/1 "
                                               + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=2000 "
                                               + "! rtph264pay name=pay0 pt=96 config-interval=1 )"])
        let (serve, port, sdir) = try Servers.serve("streams:\n  snow:\n    source: \(camera.url("/snow"))\n    transport: tcp\n")
        defer { serve.stop(); try? FileManager.default.removeItem(at: sdir) }
        let client = Paths.packageRoot.appendingPathComponent("scripts/wall_client.py").path
        usleep(1_500_000)
        let fast = try ChildProcess(Servers.python, [client, String(port), "snow", "--seconds", "12"])
        let slow = try ChildProcess(Servers.python, [client, String(port), "snow", "--seconds", "12", "--rate-kbit", "500"])
        defer { fast.stop(); slow.stop() }
        #expect(fast.wait(timeout: 60) && slow.wait(timeout: 60))
        func result(_ p: ChildProcess) throws -> [String: Any] {
            let line = try #require(p.stdout.split(separator: "\n").last { $0.hasPrefix("{") }, "\(p.stdout) \(p.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let f = try result(fast), s = try result(slow)
        print("wall: fast viewer \(f)\nwall: throttled viewer \(s)")
        // The unaffected viewer: every frame, at once, at the source's bitrate.
        #expect((f["frames"] as? Int ?? 0) >= 300, "\(f)")
        #expect((f["age_p95_ms"] as? Double ?? 1e9) < 250, "\(f)")
        #expect((f["kbit_s"] as? Double ?? 0) > 1500, "\(f)")
        // The throttled one: bounded delay (without its policy it grows by a second each second),
        // frames skipped to keyframes and counted by reason.
        #expect((s["age_p95_ms"] as? Double ?? 1e9) < 1500, "\(s)")
        let server = try #require(s["server"] as? [String: Any])
        let reasons = server["dropped_by_reason"] as? [String: Int] ?? [:]
        #expect((reasons["slow_viewer"] ?? 0) > 0, "\(s)")
        #expect((s["keyframes"] as? Int ?? 0) >= 8, "the throttled viewer should still get the keyframes: \(s)")
        #expect((s["frames"] as? Int ?? 0) < (f["frames"] as? Int ?? 0), "\(s)")
    }
}
