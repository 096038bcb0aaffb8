import Testing
import Foundation
import TestSupport

/// Connections that hold the server for nothing: idle sockets, half-sent requests (slowloris),
/// viewers that never read, and one client opening too many previews.
@Suite(.serialized) struct LimitsTests {
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
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Int]) ?? [:]
    }

    @Test func idleAndSlowlorisConnectionsAreClosedWhileOthersAreServed() throws {
        let (serve, port, dir) = try Self.start()
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let holders = try ChildProcess(Servers.python, [Self.script, "hold", String(port), "--idle", "500", "--slowloris", "200", "--seconds", "5"])
        #expect(holders.waitFor("ready", timeout: 20))
        // Meanwhile the server answers at once, and a viewer gets pictures.
        let t0 = Date()
        let health = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/healthz"], timeout: 10)
        #expect(health.stdout == "ok\n" && Date().timeIntervalSince(t0) < 1, "healthz took \(Date().timeIntervalSince(t0)) s")
        let t1 = Date()
        let snap = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/streams/cam/snapshot.jpg"], timeout: 10)
        #expect(snap.stdout == "200" && Date().timeIntervalSince(t1) < 1.5)
        #expect(holders.wait(timeout: 30))
        let r = Self.json(holders.stdout)
        // After 5 s with a 2 s idle timeout, every idle and every half-sent request is gone.
        #expect(r["idle_closed"] == 500 && r["slowloris_closed"] == 200, "\(holders.stdout) \(holders.stderr)")
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
