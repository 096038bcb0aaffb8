import Wire
import Foundation
import HummingbirdBcrypt

/// `liverelay bench access`: what authentication and TLS cost on the preview (snapshot JPEG)
/// and LL-HLS (playlist) paths. One `serve` per setting, the same stream, loaded by h2load with
/// the same requests in one run: latency per request and the server's CPU per 1000 requests.
public struct AccessBenchmark {
    /// Requests per URL and setting.
    public var requests = 2000
    /// Concurrent clients (connections).
    public var clients = 8
    /// Where the certificate and configs go.
    public var out = "./bench-results"

    public init() {}

    struct Setting {
        let name: String
        let tls: Bool
        let auth: Bool
        let http2: Bool
    }

    struct Row {
        let setting: String
        let path: String
        let meanMs: Double
        let maxMs: Double
        let requestsPerSecond: Double
        let cpuMsPer1000: Double
        let failed: Int
    }

    public func run() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load") else {
            throw BenchError("h2load is not installed: run scripts/setup.sh (Debian's nghttp2-client)")
        }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("access-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let cert = work.appendingPathComponent("c.pem").path, key = work.appendingPathComponent("k.pem").path
        let ssl = try ChildProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                                                            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], timeout: 60)
        guard ssl.status == 0 else { throw BenchError("openssl: \(ssl.stderr)") }
        let password = "bench-password"
        let hash = Bcrypt.hash(password, cost: 12)
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let settings = [
            Setting(name: "HTTP/1.1, no auth", tls: false, auth: false, http2: false),
            Setting(name: "HTTP/1.1, Basic auth", tls: false, auth: true, http2: false),
            Setting(name: "HTTPS HTTP/1.1, Basic auth", tls: true, auth: true, http2: false),
            Setting(name: "HTTPS HTTP/2, Basic auth", tls: true, auth: true, http2: true),
        ]
        var rows: [Row] = []
        var logins: [(String, Double)] = []
        for s in settings {
            var yaml = ""
            if s.tls { yaml += "server:\n  tls: {cert: \(cert), key: \(key)}\n" }
            if s.auth { yaml += "auth:\n  users: [{name: bench, password: \"\(hash)\", permissions: [read]}]\n" }
            yaml += """
            streams:
              cam:
                source: testsrc://?size=640x360&fps=30&gop=30
                preview: {fps: 30}
                hls: {variant: lowLatency, segment_duration: 1s, part_duration: 200ms}

            """
            let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve.yaml"))
            defer { serve.stop() }
            Thread.sleep(forTimeInterval: 3) // a segment and pictures exist
            let base = "\(s.tls ? "https" : "http")://127.0.0.1:\(port)"
            // A client logs in once: the first request pays for bcrypt (cost 12), the rest hit
            // the server's cache of good credentials. That first request is timed on its own.
            let authArgs = s.auth ? ["-u", "bench:\(password)"] : []
            let first = try ChildProcess.run("/usr/bin/curl", ["-s", "-k", "-o", "/dev/null", "-w", "%{time_total}"] + authArgs + [base + "/api/streams/cam"], timeout: 30)
            logins.append((s.name, (Double(first.stdout) ?? 0) * 1000))
            for path in ["/streams/cam/snapshot.jpg", "/streams/cam/hls/index.m3u8"] {
                var args = ["-n", String(requests), "-c", String(clients)]
                if !s.http2 { args.append("--h1") }
                if s.auth { args += ["-H", "Authorization: Basic " + Base64.encode("bench:\(password)".utf8)] }
                let cpu0 = serve.cpuSeconds
                let r = try ChildProcess.run("/usr/bin/h2load", args + [base + path], timeout: 300)
                let cpu = serve.cpuSeconds - cpu0
                rows.append(Self.parse(r.stdout, setting: s.name, path: path, cpuSeconds: cpu, requests: requests))
            }
        }
        var md = "Authentication and TLS cost: \(requests) requests per row, \(clients) clients (h2load), one `serve` per setting, same machine and run.\n\n"
        md += "| setting | path | mean ms | max ms | req/s | server CPU ms per 1000 requests | failed |\n|---|---|---:|---:|---:|---:|---:|\n"
        for r in rows {
            md += String(format: "| %@ | %@ | %.2f | %.1f | %.0f | %.0f | %d |\n", r.setting, r.path, r.meanMs, r.maxMs, r.requestsPerSecond, r.cpuMsPer1000, r.failed)
        }
        md += "\nFirst request of a client (curl, a new connection; with auth, the one bcrypt check): "
        md += logins.map { String(format: "%@ %.0f ms", $0.0, $0.1) }.joined(separator: "; ") + ".\n"
        print(md)
        try md.write(to: URL(fileURLWithPath: out).appendingPathComponent("access.md"), atomically: true, encoding: .utf8)
    }

    /// Reads h2load's summary: "time for request: min max mean sd", "finished in …, N req/s",
    /// "requests: … N failed".
    static func parse(_ text: String, setting: String, path: String, cpuSeconds: Double, requests: Int) -> Row {
        func ms(_ token: Substring) -> Double {
            if token.hasSuffix("us") { return (Double(token.dropLast(2)) ?? 0) / 1000 }
            if token.hasSuffix("ms") { return Double(token.dropLast(2)) ?? 0 }
            if token.hasSuffix("s") { return (Double(token.dropLast(1)) ?? 0) * 1000 }
            return 0
        }
        var mean = 0.0, maxMs = 0.0, rps = 0.0, failed = 0
        for line in text.split(separator: "\n") {
            if line.hasPrefix("time for request:") {
                let f = line.dropFirst("time for request:".count).split(separator: " ")
                if f.count >= 3 { maxMs = ms(f[1]); mean = ms(f[2]) }
            } else if line.hasPrefix("finished in"), let r = line.split(separator: ",").dropFirst().first {
                rps = Double(r.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            } else if line.hasPrefix("requests:"), let part = line.split(separator: ",").first(where: { $0.contains("failed") }) {
                failed = Int(part.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            }
        }
        return Row(setting: setting, path: path, meanMs: mean, maxMs: maxMs, requestsPerSecond: rps,
                   cpuMsPer1000: cpuSeconds * 1000 / Double(max(1, requests)) * 1000, failed: failed)
    }
}
