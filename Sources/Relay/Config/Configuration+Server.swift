public import Access
import Foundation
import Wire
import Yams

/// What the server lets one client, and an idle or stalled connection, hold.
public struct ServerLimits: Sendable, Hashable {
    /// A connection with no request in progress (or a request that stops arriving half-sent,
    /// slowloris) is closed after this many seconds.
    public var idleTimeout: Double = 30
    /// A response whose client stops reading is dropped after this many seconds.
    public var writeStallTimeout: Double = 10
    /// MJPEG viewers one client address may hold open.
    public var viewersPerClient = 32
    /// LL-HLS blocking playlist requests one client address may have waiting.
    public var blockingRequestsPerClient = 64
    /// HTTP connections open at once, all clients together; more are closed as they come
    /// (what is left for sources, recordings and HLS files is never given to clients).
    public var connections = 4096
    public init() {}
}

/// HTTPS for the server: PEM files.
public struct TLSSettings: Sendable, Hashable {
    public var certificate: String
    public var key: String
    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

extension Configuration {
    /// Whether the server listens on loopback only (127.0.0.0/8, ::1, localhost).
    public var listensOnLoopbackOnly: Bool { Self.isLoopback(host: listenHost) }

    static func isLoopback(host: String) -> Bool {
        let h = String(decoding: host.utf8.filter { $0 != 0x5B && $0 != 0x5D }, as: UTF8.self).lowercased()
        return h == "localhost" || h == "::1" || h.hasPrefix("127.")
    }

    /// The Host header values the server answers: `server.allowed_hosts`, else localhost,
    /// 127.0.0.1 and ::1 for a loopback bind (which stops a web page from reaching it through
    /// DNS rebinding); nil: any host (a bind beyond loopback, behind `auth`).
    public var effectiveAllowedHosts: Set<String>? {
        if let a = allowedHosts { return Set(a.map { $0.lowercased() }) }
        return listensOnLoopbackOnly ? ["localhost", "127.0.0.1", "::1"] : nil
    }

    /// Refuses what must not run: a server reachable beyond loopback that lets anyone in.
    /// Called once the command line's overrides are applied.
    public func validateExposure(file: String) throws(ConfigError) {
        if !listensOnLoopbackOnly && auth == nil {
            throw ConfigError(file: file, path: "auth", problem: "server.listen \(listenHost):\(listenPort) is reachable beyond loopback: add an auth section (users, or anonymous: [read] to open reading on purpose)")
        }
        if let w = webrtc, let host = w.host, !Self.isLoopback(host: host), auth == nil {
            throw ConfigError(file: file, path: "auth", problem: "server.webrtc.listen \(host):\(w.port) is reachable beyond loopback: add an auth section (users, or anonymous: [read] to open reading on purpose)")
        }
        if let rtsp, !Self.isLoopback(host: rtsp.host), auth == nil {
            throw ConfigError(file: file, path: "auth", problem: "server.rtsp.listen \(rtsp.host):\(rtsp.port) is reachable beyond loopback: add an auth section (users, or anonymous: [read] to open reading on purpose)")
        }
    }

    static func serverSettings(_ node: Node, _ r: Reader, into config: inout Configuration) throws(ConfigError) {
        let s = try r.mapping(node, "server", allowed: ["listen", "tls", "allowed_hosts", "trusted_proxies", "limits", "rtsp", "webrtc"])
        if let w = s["webrtc"] { config.webrtc = try WebRTCServerSettings.parse(w, r) }
        if let rtsp = s["rtsp"] { config.rtsp = try RTSPServerSettings(config: rtsp, r) }
        if let l = s["limits"] {
            let m = try r.mapping(l, "server.limits", allowed: ["idle_timeout", "write_stall_timeout", "per_client", "connections"])
            if let v = m["connections"] { config.limits.connections = Int(try r.number(v, "server.limits.connections", 1...1_000_000)) }
            if let v = m["idle_timeout"] { config.limits.idleTimeout = try r.duration(v, "server.limits.idle_timeout", 1...3600) }
            if let v = m["write_stall_timeout"] { config.limits.writeStallTimeout = try r.duration(v, "server.limits.write_stall_timeout", 1...3600) }
            if let pc = m["per_client"] {
                let p = try r.mapping(pc, "server.limits.per_client", allowed: ["viewers", "blocking_requests"])
                if let v = p["viewers"] { config.limits.viewersPerClient = Int(try r.number(v, "server.limits.per_client.viewers", 1...100_000)) }
                if let v = p["blocking_requests"] { config.limits.blockingRequestsPerClient = Int(try r.number(v, "server.limits.per_client.blocking_requests", 1...100_000)) }
            }
        }
        if let listen = s["listen"] { try config.setListen(try r.string(listen, "server.listen"), file: r.file) }
        if let tls = s["tls"] {
            let t = try r.mapping(tls, "server.tls", allowed: ["cert", "key"])
            guard let cert = t["cert"] else { throw ConfigError(file: r.file, path: "server.tls.cert", problem: "missing") }
            guard let key = t["key"] else { throw ConfigError(file: r.file, path: "server.tls.key", problem: "missing") }
            config.tls = TLSSettings(certificate: try r.string(cert, "server.tls.cert"), key: try r.string(key, "server.tls.key"))
        }
        if let hosts = s["allowed_hosts"] { config.allowedHosts = try r.strings(hosts, "server.allowed_hosts") }
        if let proxies = s["trusted_proxies"] {
            var networks: [IPNetwork] = []
            for (i, text) in try r.strings(proxies, "server.trusted_proxies").enumerated() {
                guard let n = IPNetwork(text) else {
                    throw ConfigError(file: r.file, path: "server.trusted_proxies[\(i)]", problem: "\"\(text.prefix(100))\" is not an address or a network (127.0.0.1, 10.0.0.0/8, ::1)")
                }
                networks.append(n)
            }
            config.trustedProxies = TrustedProxies(networks)
        }
    }
}
