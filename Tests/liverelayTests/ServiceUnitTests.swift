import Testing
import Foundation
import Glibc
import TestSupport
import Bench
import Relay
import RelayAPI

/// The systemd unit in dist/ and the readiness protocol it relies on (Type=notify).
@Suite(.ownThreads, .serialized) struct ServiceUnitTests {
    /// `systemd-analyze verify` on the shipped unit, with ExecStart's binary at the path this
    /// build put it (verify checks that the binary exists; the rest is the file as shipped).
    @Test func theUnitVerifies() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            Issue.record("systemd-analyze missing: scripts/setup.sh installs systemd")
            return
        }
        let dir = Paths.tempDirectory("unit")
        defer { try? FileManager.default.removeItem(at: dir) }
        let shipped = try String(contentsOf: Paths.packageRoot.appendingPathComponent("dist/liverelay.service"), encoding: .utf8)
        #expect(shipped.contains("Type=notify") && shipped.contains("NoNewPrivileges=yes") && shipped.contains("ProtectSystem=strict"))
        #expect(shipped.contains("CapabilityBoundingSet=CAP_NET_BIND_SERVICE") && shipped.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        let unit = dir.appendingPathComponent("liverelay.service")
        try shipped.replacingOccurrences(of: "/usr/local/bin/liverelay", with: Paths.liverelay).write(to: unit, atomically: true, encoding: .utf8)
        let r = try ChildProcess.run("/usr/bin/systemd-analyze", ["verify", unit.path], timeout: 60)
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r.output)")
        // And it fails on a broken unit, so the check above can fail.
        try (shipped + "\nNoSuchOption=1\n").replacingOccurrences(of: "/usr/local/bin/liverelay", with: Paths.liverelay)
            .replacingOccurrences(of: "[Install]", with: "[Service]\nBogus=yes\n[Install]").write(to: unit, atomically: true, encoding: .utf8)
        let bad = try ChildProcess.run("/usr/bin/systemd-analyze", ["verify", unit.path], timeout: 60)
        #expect(bad.stderr.contains("Bogus"), "\(bad.output)")
    }

    /// serve tells NOTIFY_SOCKET READY=1 once it listens, RELOADING=1 then READY=1 around a
    /// SIGHUP, and STOPPING=1 at SIGTERM.
    @Test func serveSpeaksTheReadinessProtocol() throws {
        let dir = Paths.tempDirectory("notify")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("notify.sock").path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func receive(within seconds: Double) -> [String] {
            var out: [String] = []
            let end = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < end {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 { out.append(String(decoding: buffer[..<n], as: UTF8.self)) }
                if out.contains(where: { $0.contains("READY=1") || $0.contains("STOPPING=1") }) && n <= 0 { break }
            }
            return out
        }
        let config = dir.appendingPathComponent("config.yaml")
        try "streams:\n  a: {source: \"testsrc://?size=160x96&fps=10\", preview: false}\n".write(to: config, atomically: true, encoding: .utf8)
        let serve = try ChildProcess(Paths.liverelay, ["serve", "--config", config.path, "--listen", "127.0.0.1:0", "--state-dir", dir.path],
                                     environment: ["NOTIFY_SOCKET": path])
        defer { serve.stop() }
        let started = receive(within: 20)
        #expect(started.contains { $0.contains("READY=1") && $0.contains("STATUS=serving 1 streams") }, "\(started) \(serve.stderr)")
        let port = try #require(serve.listeningPort("LiveRelay listening on", timeout: 30), "no HTTP server: \(serve.stderr.suffix(500))")
        #expect(FreePort.isListening(port))
        kill(serve.process.processIdentifier, SIGHUP)
        let reloaded = receive(within: 10)
        #expect(reloaded.first?.contains("RELOADING=1") == true && reloaded.first?.contains("MONOTONIC_USEC=") == true, "\(reloaded)")
        #expect(reloaded.contains { $0.contains("READY=1") }, "\(reloaded)")
        kill(serve.process.processIdentifier, SIGTERM)
        let stopping = receive(within: 10)
        #expect(stopping.contains { $0.contains("STOPPING=1") }, "\(stopping)")
        #expect(serve.wait(timeout: 15))
    }

    /// The unit runs serve as its own unprivileged user, and so does this test (`nobody`): every
    /// TCP door takes connections. (Each connection's TCP_NODELAY was asked as a socket-level
    /// option, which is SO_DEBUG: root may set it, anyone else is refused, and every RTSP, RTMP
    /// and ICE-TCP connection was closed as it came. The tests run as root and never saw it; the
    /// package's check did.)
    @Test func serveAsAnUnprivilegedUserTakesConnectionsAtEveryDoor() throws {
        let dir = Paths.tempDirectory("unprivileged")
        defer { try? FileManager.default.removeItem(at: dir) }
        chmod(dir.path, 0o777)
        let config = dir.appendingPathComponent("config.yaml")
        try """
        server:
          rtsp: {listen: "127.0.0.1:0"}
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
        streams:
          cam: {source: "testsrc://?size=320x180&fps=15&gop=15", preview: false}
          pushed: {source: publish, preview: false}
        """.write(to: config, atomically: true, encoding: .utf8)
        chmod(config.path, 0o644)
        let serve = try ChildProcess("/usr/sbin/runuser", ["-u", "nobody", "--", Paths.liverelay, "serve", "--config", config.path,
                                                            "--listen", "127.0.0.1:0", "--state-dir", dir.path])
        defer { serve.stop() }
        let http = try #require(serve.listeningPort("LiveRelay listening on", timeout: 30), "\(serve.stderr.suffix(500))")
        let rtsp = try #require(serve.listeningPort("RTSP server listening on", timeout: 10), "\(serve.stderr.suffix(500))")
        let rtmp = try #require(serve.listeningPort("RTMP ingest listening on", timeout: 10), "\(serve.stderr.suffix(500))")
        var read = ""
        for _ in 0..<20 where read.isEmpty {
            read = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,width",
                                                            "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/cam"], timeout: 20).stdout
            if read.isEmpty { usleep(300_000) }
        }
        #expect(read.hasPrefix("h264,320"), "RTSP out as nobody: \(read)")
        let publisher = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15", "-t", "8",
                                                             "-c:v", "libx264", "-preset", "ultrafast", "-g", "15", "-f", "flv", "rtmp://127.0.0.1:\(rtmp)/live/pushed"])
        defer { publisher.stop() }
        var state: StreamState?
        let end = Date().addingTimeInterval(12)
        while Date() < end && state != .live {
            usleep(300_000)
            state = Servers.apiIfAny(StreamView.self, "http://127.0.0.1:\(http)/api/streams/pushed")?.stream.state
        }
        #expect(state == .live, "RTMP ingest as nobody: \(String(describing: state)); \(publisher.stderr.suffix(300))")
    }
}
