public import Foundation
import Glibc

/// nginx as the edge cache in front of a LiveRelay origin, with the shipped
/// dist/nginx/liverelay-edge.conf (only its origin, port and cache path replaced), and an
/// access log that says which answers came from the origin (`$upstream_cache_status`).
public final class NginxEdge: @unchecked Sendable {
    // Safety: immutable after init.
    public let port: Int
    public let directory: URL
    public let child: ChildProcess

    /// - Parameter shipped: dist/nginx/liverelay-edge.conf of the checkout.
    public init(origin: Int, shipped: URL) throws {
        port = LatencyRun.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("liverelay-edge-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
        let shipped = try String(contentsOf: shipped, encoding: .utf8)
        let edge = shipped.replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server 127.0.0.1:\(origin);")
            .replacingOccurrences(of: "listen 8081;", with: "listen 127.0.0.1:\(port);")
            .replacingOccurrences(of: "/var/cache/nginx/liverelay", with: directory.appendingPathComponent("cache").path)
        let conf = """
        daemon off;
        master_process off;
        worker_rlimit_nofile 8192;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/logs/error.log;
        events { worker_connections 4096; }
        http {
          log_format cache '$upstream_cache_status $status $request_uri';
          access_log \(directory.path)/logs/access.log cache;
          client_body_temp_path \(directory.path)/body;
          proxy_temp_path \(directory.path)/proxy;
        \(edge)
        }
        """
        let confPath = directory.appendingPathComponent("nginx.conf")
        try conf.write(to: confPath, atomically: true, encoding: .utf8)
        child = try ChildProcess(name: "nginx edge", "/usr/sbin/nginx", ["-c", confPath.path, "-p", directory.path])
        guard Self.waitListening(port, timeout: 10) else {
            child.stop()
            throw BenchError("nginx edge did not start: \(child.stderr) \((try? String(contentsOf: directory.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? "")")
        }
    }

    static func waitListening(_ port: Int, timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
            close(fd)
            if ok { return true }
            usleep(50_000)
        }
        return false
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// Each logged request: (cache status, HTTP status, URI).
    public var requests: [(cache: String, status: Int, uri: String)] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", maxSplits: 2)
            guard f.count == 3, let status = Int(f[1]) else { return nil }
            return (String(f[0]), status, String(f[2]))
        }
    }

    deinit {
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
