public import Access
import Foundation
import MediaCore
import Wire
import Yams
import Demux

extension Configuration {
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
