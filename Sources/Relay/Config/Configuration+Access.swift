public import Access
import Foundation
import MediaCore
import Wire
import Yams
import Demux

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

    /// `server.webrtc.ice_servers`: STUN and TURN servers offered to WebRTC clients, each with
    /// fixed credentials or coturn's shared secret (`use-auth-secret`), from which each client
    /// gets its own, valid for `ttl`.
    static func iceServers(_ node: Node, _ r: Reader) throws(ConfigError) -> [ICEServer] {
        guard case .sequence(let seq) = node else {
            throw ConfigError(file: r.file, path: "server.webrtc.ice_servers", problem: "expected a list of {urls, username, credential} or {urls, secret, ttl}")
        }
        var out: [ICEServer] = []
        for (i, n) in seq.enumerated() {
            let path = "server.webrtc.ice_servers[\(i)]"
            let m = try r.mapping(n, path, allowed: ["urls", "username", "credential", "secret", "ttl"])
            guard let u = m["urls"] else { throw ConfigError(file: r.file, path: "\(path).urls", problem: "missing (stun:HOST:PORT, turn:HOST:PORT?transport=udp, turns:…)") }
            var server = ICEServer(urls: try r.strings(u, "\(path).urls"))
            let turn = server.urls.contains { $0.hasPrefix("turn:") || $0.hasPrefix("turns:") }
            for url in server.urls where !["stun:", "stuns:", "turn:", "turns:"].contains(where: { url.hasPrefix($0) }) || url.utf8.count > 512 {
                throw ConfigError(file: r.file, path: "\(path).urls", problem: "\"\(url.prefix(100))\" is not a stun:, stuns:, turn: or turns: URL")
            }
            if let v = m["username"] { server.username = try r.string(v, "\(path).username") }
            if let v = m["credential"] {
                let c = try r.string(v, "\(path).credential")
                server.credential = c
            }
            if let v = m["secret"] {
                let c = try r.string(v, "\(path).secret")
                guard c.utf8.count >= 16 else { throw ConfigError(file: r.file, path: "\(path).secret", problem: "at least 16 characters") }
                server.secret = c
            }
            if let v = m["ttl"] { server.ttl = Int(try r.duration(v, "\(path).ttl", 60...7 * 86400)) }
            if server.secret != nil && (server.username != nil || server.credential != nil) {
                throw ConfigError(file: r.file, path: path, problem: "either secret (credentials made per client) or username and credential, not both")
            }
            if turn && server.secret == nil && (server.username == nil || server.credential == nil) {
                throw ConfigError(file: r.file, path: path, problem: "a TURN server needs username and credential, or secret")
            }
            out.append(server)
        }
        return out
    }

    static func serverSettings(_ node: Node, _ r: Reader, into config: inout Configuration) throws(ConfigError) {
        let s = try r.mapping(node, "server", allowed: ["listen", "tls", "allowed_hosts", "trusted_proxies", "limits", "rtsp", "webrtc"])
        if let w = s["webrtc"] {
            if case .scalar = w, try r.string(w, "server.webrtc") == "off" {
                config.webrtc = nil
            } else {
                let m = try r.mapping(w, "server.webrtc", allowed: ["listen", "hosts", "tcp", "ice_servers"])
                if let list = m["ice_servers"] { config.webrtcICEServers = try iceServers(list, r) }
                if let t = m["tcp"] {
                    let v = try r.string(t, "server.webrtc.tcp")
                    switch v.lowercased() {
                    case "on", "true", "yes": config.webrtcTCPPort = 0
                    case "off", "false", "no": config.webrtcTCPPort = nil
                    default:
                        guard let p = Int(v), (1...65535).contains(p) else {
                            throw ConfigError(file: r.file, path: "server.webrtc.tcp", problem: "expected on, off or a port from 1 to 65535, got \"\(v.prefix(100))\"")
                        }
                        config.webrtcTCPPort = p
                    }
                }
                if let l = m["listen"] {
                    let hp = try Configuration.hostPort(try r.string(l, "server.webrtc.listen"), path: "server.webrtc.listen", file: r.file)
                    config.webrtc = (hp.host, hp.port)
                }
                if let h = m["hosts"] { config.webrtcHosts = try r.strings(h, "server.webrtc.hosts") }
            }
        }
        if let rtsp = s["rtsp"] {
            let m = try r.mapping(rtsp, "server.rtsp", allowed: ["listen", "session_timeout"])
            guard let l = m["listen"] else { throw ConfigError(file: r.file, path: "server.rtsp.listen", problem: "missing (HOST:PORT)") }
            config.rtsp = try Configuration.hostPort(try r.string(l, "server.rtsp.listen"), path: "server.rtsp.listen", file: r.file)
            if let t = m["session_timeout"] { config.rtspSessionTimeout = Int(try r.duration(t, "server.rtsp.session_timeout", 2...3600)) }
        }
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


    /// `[read, metrics]` or `[{action: read, streams: "cam-*"}, …]`.
    static func permissionList(_ node: Node, _ path: String, _ r: Reader) throws(ConfigError) -> [AccessPermission] {
        guard case .sequence(let seq) = node else { throw ConfigError(file: r.file, path: path, problem: "expected a list such as [read] or [{action: read, streams: \"cam-*\"}]") }
        var out: [AccessPermission] = []
        for (i, item) in seq.enumerated() {
            let p = "\(path)[\(i)]"
            if case .scalar = item {
                out.append(AccessPermission(action: try r.choice(item, p, AccessAction.self)))
                continue
            }
            let m = try r.mapping(item, p, allowed: ["action", "streams"])
            guard let a = m["action"] else { throw ConfigError(file: r.file, path: "\(p).action", problem: "missing") }
            var permission = AccessPermission(action: try r.choice(a, "\(p).action", AccessAction.self))
            if let s = m["streams"] {
                let glob = try r.string(s, "\(p).streams")
                guard !glob.isEmpty else { throw ConfigError(file: r.file, path: "\(p).streams", problem: "empty pattern (omit it for every stream)") }
                permission.streams = glob
            }
            out.append(permission)
        }
        return out
    }

    /// A source that others push to (listen mode, a UDP socket) and that is reachable beyond
    /// loopback must carry a credential, or anyone who reaches the port publishes under this
    /// stream's name (and its recording and forwards). SRT's passphrase is checked by libsrt;
    /// FFmpeg's RTMP, RTSP and TCP listeners take any path and any key (they only log a
    /// warning), so beyond loopback they are refused until the one-port ingest server with
    /// publish keys takes them.
    static func publishExposure(_ s: Stream) -> String? {
        guard let r = s.source.utf8Range(of: "://") else { return nil }
        let scheme = s.source[..<r.lowerBound].lowercased()
        let pushed = s.sourceOptions.listen || scheme == "udp"
        guard pushed else { return nil }
        guard let authority = Reachability.authority(of: s.source) else { return "cannot tell which address this push source listens on" }
        // No host (`udp://:5000`) binds every interface.
        let host = authority.host.isEmpty ? "every interface" : authority.host
        if isLoopback(host: host) { return nil }
        // A multicast group is joined, not listened on by a unicast peer's choice.
        if scheme == "udp", let first = Int(host.split(separator: ".").first ?? ""), (224...239).contains(first) { return nil }
        switch scheme {
        case "srt":
            let query = s.source.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
            let passphrase = query.split(separator: "&").first { $0.lowercased().hasPrefix("passphrase=") }?.dropFirst("passphrase=".count) ?? ""
            return passphrase.count >= 10 ? nil : "an SRT listener reachable beyond loopback needs a passphrase of 10 to 79 characters (?passphrase=…): anyone could publish to it"
        default:
            return "a \(scheme) source that accepts pushes on \(host) would take any publisher (FFmpeg's listener checks no key): bind it to 127.0.0.1, or use SRT with a passphrase"
        }
    }

    static func isBcryptHash(_ s: String) -> Bool {
        s.count == 60 && ["$2a$", "$2b$", "$2y$"].contains(where: { s.hasPrefix($0) })
    }
}

extension AuthSettings {
    /// The `auth` section.
    init(config node: Node, _ r: Configuration.Reader) throws(ConfigError) {
        let m = try r.mapping(node, "auth", allowed: ["users", "anonymous", "jwt", "signed_urls"])
        var auth = AuthSettings()
        if let su = m["signed_urls"] {
            let sm = try r.mapping(su, "auth.signed_urls", allowed: ["secret"])
            guard let secretNode = sm["secret"] else { throw ConfigError(file: r.file, path: "auth.signed_urls.secret", problem: "missing") }
            let secret = try r.string(secretNode, "auth.signed_urls.secret")
            guard secret.utf8.count >= 32 else { throw ConfigError(file: r.file, path: "auth.signed_urls.secret", problem: "at least 32 characters") }
            auth.signedURLSecret = secret
        }
        if let users = m["users"] {
            guard case .sequence(let seq) = users else { throw ConfigError(file: r.file, path: "auth.users", problem: "expected a list of users") }
            for (i, u) in seq.enumerated() {
                let path = "auth.users[\(i)]"
                let um = try r.mapping(u, path, allowed: ["name", "password", "permissions"])
                guard let n = um["name"] else { throw ConfigError(file: r.file, path: "\(path).name", problem: "missing") }
                let name = try r.string(n, "\(path).name")
                guard !name.isEmpty, !name.contains(":") else { throw ConfigError(file: r.file, path: "\(path).name", problem: "must be non-empty and without ':'") }
                guard auth.user(named: name) == nil else { throw ConfigError(file: r.file, path: "\(path).name", problem: "\"\(name)\" is listed twice") }
                guard let p = um["password"] else { throw ConfigError(file: r.file, path: "\(path).password", problem: "missing") }
                let hash = try r.string(p, "\(path).password")
                guard Configuration.isBcryptHash(hash) else {
                    throw ConfigError(file: r.file, path: "\(path).password", problem: "expected a bcrypt hash ($2b$…); make one with `liverelay password`")
                }
                let permissions = try um["permissions"].map { n throws(ConfigError) in try Configuration.permissionList(n, "\(path).permissions", r) } ?? []
                auth.users.append(AccessUser(name: name, passwordHash: hash, permissions: permissions))
            }
        }
        if let a = m["anonymous"] { auth.anonymous = try Configuration.permissionList(a, "auth.anonymous", r) }
        if let j = m["jwt"] {
            let jm = try r.mapping(j, "auth.jwt", allowed: ["jwks", "claim", "issuer", "audience", "refresh"])
            guard let jwks = jm["jwks"] else { throw ConfigError(file: r.file, path: "auth.jwt.jwks", problem: "missing") }
            var settings = JWTSettings(jwks: try r.string(jwks, "auth.jwt.jwks"))
            if settings.jwks.hasPrefixIgnoringCase("http://") {
                // Keys fetched in the clear could be swapped on the way: only from this machine.
                guard let url = URL(string: settings.jwks), let host = url.host, Configuration.isLoopback(host: host) else {
                    throw ConfigError(file: r.file, path: "auth.jwt.jwks", problem: "http:// is for loopback only; use https:// (keys fetched in the clear could be replaced on the way)")
                }
            }
            if let f = jm["refresh"] {
                guard settings.isURL else { throw ConfigError(file: r.file, path: "auth.jwt.refresh", problem: "for a JWKS URL only (a file is read at start)") }
                settings.refresh = try r.duration(f, "auth.jwt.refresh", 0.1...86_400)
            }
            if let c = jm["claim"] { settings.claim = try r.string(c, "auth.jwt.claim") }
            if let i = jm["issuer"] { settings.issuer = try r.string(i, "auth.jwt.issuer") }
            if let a = jm["audience"] { settings.audience = try r.string(a, "auth.jwt.audience") }
            auth.jwt = settings
        }
        self = auth
    }
}
