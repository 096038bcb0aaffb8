import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// Connections that hold the server for nothing: idle sockets, half-sent requests (slowloris),
/// viewers that never read, and one client opening too many previews.
@Suite(.ownThreads, .serialized) struct LimitsTests {
    static let config = """
    server:
      limits: {idle_timeout: 2s, write_stall_timeout: 2s, per_client: {viewers: 3}}
    streams:
      cam:
        source: testsrc://?size=640x360&fps=30&gop=30&bitrate=2000
        preview: {size: 640x360, fps: 30, quality: 95}
    """

    static func start() throws -> (ChildProcess, Int, URL) {
        try Servers.serve(config)
    }

    static var script: String { Paths.packageRoot.appendingPathComponent("scripts/slow_clients.py").path }

    static func json(_ text: String) -> [String: Int] {
        let line = text.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        // A plain decoder: the script's keys (`idle_closed`) are read as it writes them.
        return (try? JSONDecoder().decode([String: Int].self, from: Data(line.utf8))) ?? [:]
    }

    /// 1,000 idle connections and 200 slowloris clients: meanwhile the server answers, a preview
    /// viewer gets pictures at once, and a camera that went away is reconnected when it returns
    /// (descriptors are not exhausted); after `idle_timeout` every held connection is closed.
    @Test func idleAndSlowlorisConnectionsAreClosedWhileOthersAreServed() throws {
        var camera: Servers.RTSP? = try Servers.RTSP()
        let cameraPort = camera!.port
        let (serve, port, dir) = try Servers.serve(Self.config + """

          door:
            source: \(camera!.url())
            preview: false
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(Self.waitForState(port, "door", "live", seconds: 15))
        camera = nil    // the camera goes away …
        #expect(Self.waitForState(port, "door", "reconnecting", seconds: 10))
        let holders = try ChildProcess(Servers.python, [Self.script, "hold", String(port), "--idle", "1000", "--slowloris", "200", "--seconds", "6"])
        defer { holders.stop() }
        #expect(holders.waitFor("ready", timeout: 30))
        camera = try Servers.RTSP(port: cameraPort)    // … and returns while the connections are held
        // Meanwhile the server answers at once, and a viewer gets pictures.
        let t0 = Date()
        let health = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/healthz"], timeout: 10)
        #expect(health.stdout == "ok\n" && Date().timeIntervalSince(t0) < 1, "healthz took \(Date().timeIntervalSince(t0)) s")
        let t1 = Date()
        let snap = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/streams/cam/snapshot.jpg"], timeout: 10)
        #expect(snap.stdout == "200" && Date().timeIntervalSince(t1) < 1.5)
        // An MJPEG viewer: its first pictures arrive within a second (curl stops it then).
        let viewer = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "1", "-o", "/dev/null", "-w", "%{size_download}", "http://127.0.0.1:\(port)/streams/cam/preview.mjpg"], timeout: 10)
        #expect((Int(viewer.stdout) ?? 0) > 20_000, "the viewer got \(viewer.stdout) bytes in 1 s")
        #expect(Self.waitForState(port, "door", "live", seconds: 10), "the camera was not reconnected while the connections were held")
        #expect(holders.wait(timeout: 60))
        let r = Self.json(holders.stdout)
        // After 6 s with a 2 s idle timeout, every idle and every half-sent request is gone.
        #expect(r["idle_closed"] == 1000 && r["slowloris_closed"] == 200, "\(holders.stdout) \(holders.stderr)")
    }

    static func waitForState(_ port: Int, _ stream: String, _ state: String, seconds: Double) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let r = try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "2", "http://127.0.0.1:\(port)/api/streams/\(stream)"], timeout: 5),
               let j = try? Servers.decode(StreamView.self, r.stdout),
               j.stream.state.rawValue == state { return true }
            usleep(200_000)
        }
        return false
    }

    @Test func aViewerThatNeverReadsIsDroppedAndOneClientHoldsFewPreviews() throws {
        let (serve, port, dir) = try Self.start()
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let stalled = try ChildProcess(Servers.python, [Self.script, "stalled", String(port), "/streams/cam/preview.mjpg", "--seconds", "8"])
        #expect(stalled.waitFor("ready", timeout: 20))
        // Three viewers from this address are served; the fourth is told why not.
        var viewers: [ChildProcess] = []
        defer { for v in viewers { v.stop() } }
        usleep(300_000)
        for _ in 0..<2 {
            viewers.append(try ChildProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/streams/cam/preview.mjpg"]))
        }
        usleep(500_000)
        let fourth = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/streams/cam/preview.mjpg"], timeout: 10)
        #expect(fourth.stdout == "429")
        #expect(stalled.wait(timeout: 30))
        #expect(Self.json(stalled.stdout.replacingOccurrences(of: "true", with: "1").replacingOccurrences(of: "false", with: "0"))["closed"] == 1,
                "a viewer that never read was still served after 8 s: \(stalled.stdout)")
        // Its slot is free again.
        let again = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "2", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/streams/cam/preview.mjpg"], timeout: 10)
        #expect(again.stdout == "200", "\(again.stdout)")
    }

    /// The global cap: beyond `server.limits.connections` open at once, new connections are
    /// closed as they come; as the others close, the server answers again.
    @Test func connectionsBeyondTheGlobalCapAreClosed() throws {
        let (serve, port, dir) = try Servers.serve("server:\n  limits: {connections: 20, idle_timeout: 30s}\nstreams:\n  cam: {source: \"testsrc://?size=160x96&fps=5\", preview: false}\n")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let holder = try ChildProcess(Servers.python, ["-c", """
        import socket, time
        s = [socket.create_connection(("127.0.0.1", \(port))) for _ in range(20)]
        print("holding", flush=True)
        time.sleep(6)
        """])
        defer { holder.stop() }
        #expect(holder.waitFor("holding", timeout: 10))
        usleep(300_000)
        let full = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/healthz"], timeout: 10)
        #expect(full.stdout == "000", "answered beyond the cap: \(full.stdout)")
        #expect(holder.wait(timeout: 20))
        usleep(500_000)
        let free = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/healthz"], timeout: 10)
        #expect(free.stdout == "200", "\(free.stdout)")
    }
}
