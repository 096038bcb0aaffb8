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
}
