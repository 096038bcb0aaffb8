import Foundation
import Glibc
import Synchronization
import Relay
import Wire

/// `liverelay bench ptz`: how long a PTZ command takes from LiveRelay's API to the camera.
/// ipycam (setup's venv, scripts/onvif_camera.py) serves PTZ behind a timestamping TCP proxy
/// in this process; `serve` reaches the camera through it (`onvif://…@proxy`). For each
/// command the bench notes when it sent the API request and when the request arrived at the
/// camera (the proxy's first byte of it), and the API's whole round trip; the same commands
/// sent straight to the camera by the same SOAP client are the baseline. Run from the checkout.
public struct PTZBenchmark {
    public var commands = 200
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let python = "/opt/liverelay-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.fileExists(atPath: "scripts/onvif_camera.py") else {
            throw BenchError("run from the checkout after scripts/setup.sh: \(python) with ipycam and scripts/onvif_camera.py are needed")
        }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("ptz-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let cameraPort = freePort()
        let camera = try ChildProcess(name: "ipycam", "/bin/sh", ["-c", "cd '\(work.path)' && exec \(python) '\(FileManager.default.currentDirectoryPath)/scripts/onvif_camera.py' --http-port \(cameraPort) --rtsp-port 1 --user admin --password bench"])
        defer { camera.stop() }
        guard camera.waitFor("http://", timeout: 20) else { throw BenchError("ipycam did not start: \(camera.stderr.suffix(300))") }
        let proxy = try StampingProxy(upstream: cameraPort)
        defer { proxy.stop() }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        // The camera serves no video (RTSP port 1): on demand, the stream is never opened (no
        // resolution traffic through the proxy); the PTZ API resolves the camera once.
        let yaml = "streams:\n  cam: {source: \"onvif://admin:bench@127.0.0.1:\(proxy.port)/\", preview: false, on_demand: true}\n"
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("ptz.yaml"))
        defer { serve.stop() }
        let api = "http://127.0.0.1:\(port)/api/streams/cam/ptz"
        // Warm: the camera resolved and its connection pooled.
        for _ in 0..<20 {
            if case .success(let a) = BoundedHTTP.sendWaiting(method: "GET", url: api, timeout: 5, maxBody: 1 << 20), a.status == 200 { break }
            sleep(1)
        }
        let client = ONVIFClient(url: ONVIFURL("onvif://admin:bench@127.0.0.1:\(proxy.port)")!, timeout: 5)
        let ptz = ONVIFClient.PTZ(service: "http://127.0.0.1:\(proxy.port)/onvif/ptz_service", profile: "Profile_Main")

        var toCamera: [Double] = [], apiRoundTrip: [Double] = [], direct: [Double] = [], directToCamera: [Double] = []
        var failures = 0
        for i in 0..<commands {
            let body = Array((i % 2 == 0 ? #"{"action": "move", "pan": 0.2, "timeout": 1}"# : #"{"action": "stop"}"#).utf8)
            let sent = Self.now()
            let before = proxy.arrivals.withLock { $0.count }
            let r = BoundedHTTP.sendWaiting(method: "POST", url: api, headers: [("Content-Type", "application/json")], body: body, timeout: 5, maxBody: 65_536)
            let done = Self.now()
            guard case .success(let a) = r, a.status == 200, let arrived = proxy.arrivals.withLock({ $0.count > before ? $0[before] : nil }) else { failures += 1; continue }
            toCamera.append((arrived - sent) * 1000)
            apiRoundTrip.append((done - sent) * 1000)
            // The same command straight to the camera, through the same proxy.
            let t0 = Self.now()
            let b0 = proxy.arrivals.withLock { $0.count }
            let ok = Self.wait { i % 2 == 0 ? await client.move(ptz, pan: 0.2, tilt: 0, zoom: 0, timeout: 1) : await client.stop(ptz) }
            let t1 = Self.now()
            if ok, let arrived = proxy.arrivals.withLock({ $0.count > b0 ? $0[b0] : nil }) {
                direct.append((t1 - t0) * 1000)
                directToCamera.append((arrived - t0) * 1000)
            }
        }
        func p(_ v: [Double], _ q: Double) -> String {
            guard !v.isEmpty else { return "-" }
            let s = v.sorted()
            return String(format: "%.1f", s[min(s.count - 1, Int(Double(s.count) * q))])
        }
        let table = """
        PTZ commands (\(commands), moves and stops in turn; \(failures) failed), ms:
        | path | to the camera p50 | p95 | round trip p50 | p95 |
        |---|---:|---:|---:|---:|
        | LiveRelay's API (POST /api/streams/cam/ptz) | \(p(toCamera, 0.5)) | \(p(toCamera, 0.95)) | \(p(apiRoundTrip, 0.5)) | \(p(apiRoundTrip, 0.95)) |
        | the same SOAP call straight to the camera | \(p(directToCamera, 0.5)) | \(p(directToCamera, 0.95)) | \(p(direct, 0.5)) | \(p(direct, 0.95)) |
        """
        print(table)
        try table.write(to: URL(fileURLWithPath: out).appendingPathComponent("ptz.md"), atomically: true, encoding: .utf8)
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    static func wait(_ body: @escaping @Sendable () async -> Result<Void, ONVIFError>) -> Bool {
        let ok = Mutex(false)
        let done = DispatchSemaphore(value: 0)
        Task {
            if case .success = await body() { ok.withLock { $0 = true } }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
        return ok.withLock { $0 }
    }

    func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}

/// A TCP proxy on loopback that notes when each request begins (a read from the client that
/// starts with an HTTP method), on `PTZBenchmark.now()`'s clock.
final class StampingProxy: @unchecked Sendable {
    // Safety: `listener` and `port` are set once in init; `arrivals` and `running` are locked.
    let arrivals = Mutex<[Double]>([])
    private let running = Mutex(true)
    private let listener: Int32
    let port: Int

    init(upstream: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { close(fd); throw BenchError("the stamping proxy cannot listen") }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread { [self] in
            defer { close(fd) }
            while running.withLock({ $0 }) {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 200) == 1 else { continue }
                let client = accept(fd, nil, nil)
                guard client >= 0 else { continue }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var to = sockaddr_in()
                to.sin_family = sa_family_t(AF_INET)
                to.sin_addr.s_addr = inet_addr("127.0.0.1")
                to.sin_port = UInt16(upstream).bigEndian
                let connected = withUnsafePointer(to: &to) { q in q.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
                guard connected else { close(client); close(server); continue }
                var one: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                setsockopt(server, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                Thread { self.pump(client, server) }.start()
            }
        }.start()
    }

    private func pump(_ client: Int32, _ server: Int32) {
        defer { close(client); close(server) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
        while running.withLock({ $0 }) {
            guard poll(&fds, 2, 200) >= 0 else { return }
            for k in 0..<2 where fds[k].revents != 0 {
                let n = recv(fds[k].fd, &buffer, buffer.count, 0)
                guard n > 0 else { return }
                if k == 0, buffer[0] == UInt8(ascii: "P") || buffer[0] == UInt8(ascii: "G") {
                    let t = PTZBenchmark.now()
                    arrivals.withLock { $0.append(t) }
                }
                var sent = 0
                while sent < n {
                    let m = buffer.withUnsafeBytes { send(fds[1 - k].fd, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                    guard m > 0 else { return }
                    sent += m
                }
            }
        }
    }

    /// Stops accepting and pumping; the listener is closed by its thread.
    func stop() {
        running.withLock { $0 = false }
    }
}
