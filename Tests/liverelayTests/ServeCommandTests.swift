import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// `liverelay serve` as a user runs it, read by real clients: ffmpeg for MJPEG, curl for the API.
@Suite(.ownThreads, .serialized) struct ServeCommandTests {
    func startServe(_ yaml: String) throws -> (ChildProcess, Int, URL) {
        try Servers.serve(yaml)
    }

    func curl(_ args: [String]) throws -> CommandResult {
        try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10"] + args, timeout: 15)
    }

    @Test func previewIsReadByFFmpegAndTheAPIAnswers() throws {
        let (serve, port, dir) = try startServe("""
        streams:
          demo:
            source: testsrc://?size=640x360&fps=30&gop=30
            title: Test
            preview:
              ordering: arrival
              freshness: latest
              depth: 1
              size: 320x180
              fps: 30
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        Thread.sleep(forTimeInterval: 1)
        // A real client decodes the MJPEG stream.
        let ff = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-f", "mpjpeg", "-i", "http://127.0.0.1:\(port)/streams/demo/preview.mjpg",
                                                         "-frames:v", "30", "-f", "framemd5", "-"], timeout: 20)
        #expect(ff.status == 0, "\(ff.stderr)")
        #expect(ff.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count == 30)
        #expect(ff.stdout.contains("320x180"))
        // Snapshot is a JPEG.
        let snap = try curl(["-o", "/dev/null", "-w", "%{http_code} %{content_type}", "http://127.0.0.1:\(port)/streams/demo/snapshot.jpg"])
        #expect(snap.stdout == "200 image/jpeg")
        // API: live, software decode, preview sink counted.
        let api = try curl(["http://127.0.0.1:\(port)/api/streams/demo"])
        let j = try #require(try? Servers.decode(StreamView.self, api.stdout), "\(api.stdout.prefix(600))")
        #expect(j.stream.state == .live)
        let sinks = j.sinks
        // Every output is listed with its kind: the decode stage and the preview it feeds.
        let preview = try #require(sinks.first { $0.kind == .preview }, "\(sinks)")
        #expect(preview.counters.delivered > 30)
        let decode = try #require(sinks.first { $0.kind == .decode }, "\(sinks)")
        #expect(decode.state == .running && decode.counters.delivered > 30)
        // Switch the policy at run time; the source is not reconnected.
        let patch = try curl(["-X", "PATCH", "-d", "{\"freshness\":\"max_age\",\"max_age_ms\":100}", "http://127.0.0.1:\(port)/api/streams/demo/sinks/preview"])
        let pj = try #require(try? Servers.decode(StreamView.self, patch.stdout), "\(patch.stdout.prefix(600))")
        let ps = try #require(pj.sink(named: "preview"))
        #expect(ps.policy.freshness.name == "max_age")
        #expect(ps.policy.freshness == .maxAge(milliseconds: 100))
        #expect(pj.stream.connections == 1)
        // Errors: unknown stream, malformed body, hostile path; the server stays up.
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/api/streams/nope"]).stdout == "404")
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "-d", "nonsense", "http://127.0.0.1:\(port)/api/streams/demo/sinks/preview"]).stdout == "400")
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", "--path-as-is", "http://127.0.0.1:\(port)/streams/../../etc/passwd"]).stdout == "404")
        #expect(try curl(["http://127.0.0.1:\(port)/healthz"]).stdout == "ok\n")
        let metrics = try curl(["http://127.0.0.1:\(port)/metrics"])
        #expect(metrics.stdout.contains("liverelay_sink_delivered_total{stream=\"demo\",sink=\"preview\",kind=\"preview\"}"))
        // SIGTERM stops it gracefully within 5 s.
        let start = Date()
        serve.process.terminate()
        #expect(serve.wait(timeout: 6))
        #expect(Date().timeIntervalSince(start) < 5)
    }

    /// A real browser opens a stream's page: the MJPEG picture changes, and a screenshot of it
    /// carries the test source's stamp (read back by `liverelay probe`). A dead source's page
    /// shows the slate, and the API says why without the password.
    @Test func headlessChromiumShowsThePreviewAndTheSlate() throws {
        let (serve, port, dir) = try startServe("""
        streams:
          demo:
            source: testsrc://?size=640x360&fps=30&gop=30
            preview:
              fps: 30
          dead:
            source: rtsp://admin:hunter2@127.0.0.1:1/stream1
            open_timeout: 1
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let shot = dir.appendingPathComponent("shot.png").path
        let browser = Paths.packageRoot.appendingPathComponent("scripts/browser.py").path
        let live = try ChildProcess.run("/usr/bin/python3", [browser, "http://127.0.0.1:\(port)/streams/demo/", "--img", "preview",
                                                             "--seconds", "2", "--screenshot", shot], timeout: 60)
        #expect(live.status == 0, "\(live.stdout) \(live.stderr)")
        let j = try #require(try? BrowserReport.decode(live.stdout), "\(live.stdout)")
        let img = try #require(j.img, "\(live.stdout)")
        #expect(img.width == 640 && img.height == 360)
        #expect((img.distinct ?? 0) >= 10, "the picture hardly changed: \(img)")
        // The screenshot is the picture: crop the viewport's top-left 640x360 and read the stamp.
        let nut = dir.appendingPathComponent("shot.nut").path
        let conv = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", shot, "-vf", "crop=640:360:0:0", "-pix_fmt", "yuv420p",
                                                            "-c:v", "ffv1", nut], timeout: 20)
        #expect(conv.status == 0, "\(conv.stderr)")
        let probe = try ChildProcess.run(Paths.liverelay, ["probe", nut, "--frames", "1", "--json"], timeout: 20)
        let pj = try #require(try? Servers.decode(ProbeReport.self, probe.stdout), "\(probe.stdout) \(probe.stderr)")
        #expect(pj.stampsRead == 1, "no stamp in the browser's screenshot: \(probe.stdout)")

        // The dead source: the slate, flagged, and the reason in the API without credentials.
        let dead = try ChildProcess.run("/usr/bin/python3", [browser, "http://127.0.0.1:\(port)/streams/dead/", "--img", "preview", "--seconds", "0.5"], timeout: 60)
        #expect((dead.stdout.contains("\"width\": 640")), "\(dead.stdout)")
        let snap = try curl(["-D", "-", "-o", "/dev/null", "http://127.0.0.1:\(port)/streams/dead/snapshot.jpg"])
        #expect(snap.stdout.lowercased().contains("x-liverelay-signal: lost"))
        let api = try curl(["http://127.0.0.1:\(port)/api/streams/dead"])
        let deadView = try #require(try? Servers.decode(StreamView.self, api.stdout), "\(api.stdout)")
        #expect(deadView.stream.state == .reconnecting, "\(api.stdout)")
        #expect(deadView.stream.signalLostSince != nil)
        #expect(api.stdout.contains("unreachable") && !api.stdout.contains("hunter2"), "\(api.stdout)")
        #expect(!serve.stderr.contains("hunter2"))
    }

    @Test func badConfigExitsTwoNamingTheKey() throws {
        let dir = Paths.tempDirectory("badconf")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("c.yaml")
        try "streams:\n  cam1:\n    source: testsrc://\n    preview:\n      ordering: fast\n".write(to: file, atomically: true, encoding: .utf8)
        let r = try ChildProcess.run(Paths.liverelay, ["serve", "--config", file.path, "--state-dir", file.deletingLastPathComponent().path], timeout: 10)
        #expect(r.status == 2)
        #expect(r.stderr.contains("streams.cam1.preview.ordering: expected presentation or arrival, got \"fast\""), "\(r.stderr)")
    }
}

/// `liverelay serve` pulling one camera (`cam`) from an RTSP server on `port`, noticing a
/// silent camera within a second.
func servingCamera(_ port: Int) throws -> (ChildProcess, Int, URL) {
    let s = try Servers.serve("streams:\n  cam:\n    source: rtsp://127.0.0.1:\(port)/test\n    transport: tcp\n    read_timeout: 1s\n")
    return (s.child, s.port, s.dir)
}

/// `/api/events`: a script is told when a camera drops and when it is back.
@Suite(.ownThreads, .serialized) struct StreamEventTests {
    @Test func aScriptIsToldWhenACameraDropsAndReturns() throws {
        let port = FreePort.tcp()
        var camera = try Servers.RTSP(port: port)
        let (serve, sport, dir) = try servingCamera(port)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let listener = try ChildProcess("/usr/bin/curl", ["-sN", "--max-time", "25", "http://127.0.0.1:\(sport)/api/events"])
        defer { listener.stop() }
        #expect(listener.waitFor("LiveRelay stream events", timeout: 10))
        usleep(1_000_000)
        camera.child.stop()
        #expect(listener.waitFor("event: reconnecting", timeout: 10), "\(listener.stdout)")
        camera = try Servers.RTSP(port: port)
        #expect(listener.waitFor("event: live", timeout: 10), "\(listener.stdout)")
        #expect(listener.stdout.contains("\"stream\":\"cam\""))
        _ = camera
    }
}

/// The ops page's tiles follow the streams' state live: a camera that drops shows
/// "reconnecting" under its tile in headless Chromium, without a reload.
@Suite(.ownThreads, .serialized) struct OpsPageLiveStateTests {
    @Test func aTileShowsItsCameraDroppingWithoutAReload() throws {
        let port = FreePort.tcp()
        let camera = try Servers.RTSP(port: port)
        let (serve, sport, dir) = try servingCamera(port)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(1_500_000)
        let browser = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(sport)/",
                                                        "--wait-text", "[data-state=\"cam\"]=reconnecting", "--seconds", "20"])
        defer { browser.stop() }
        #expect(browser.waitFor("watching", timeout: 30), "\(browser.stderr)")
        usleep(500_000)
        camera.child.stop()
        #expect(browser.wait(timeout: 40))
        #expect(browser.stdout.contains("\"found\": true"), "\(browser.stdout) \(browser.stderr.suffix(500))")
    }
}

/// SIGTERM with an `/api/events` client connected: the streams stop, the client is told, and
/// the process exits. It hung for ever before: the HTTP server was shut down first and waited
/// on the event stream, which ends only when the engine stops.
@Suite(.ownThreads, .serialized) struct GracefulShutdownTests {
    @Test func anEventsClientDoesNotHoldTheShutdown() throws {
        let (serve, port, dir) = try Servers.serve("streams:\n  good: {source: \"testsrc://?size=160x120&fps=5\", preview: false}\n")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let listener = try ChildProcess("/usr/bin/curl", ["-sN", "--max-time", "30", "http://127.0.0.1:\(port)/api/events"])
        defer { listener.stop() }
        #expect(listener.waitFor("LiveRelay stream events", timeout: 10))
        kill(serve.process.processIdentifier, SIGTERM)
        #expect(serve.wait(timeout: 8), "serve still running 8 s after SIGTERM: \(serve.stderr.suffix(1000))")
        #expect(listener.waitFor("event: stopped", timeout: 2), "\(listener.stdout)")
    }
}
