import Yams

/// `server.webrtc`: the one UDP port every WebRTC viewer and publisher shares, the addresses
/// written as its ICE candidates, ICE over TCP, and the STUN and TURN servers offered.
public struct WebRTCServerSettings: Sendable, Equatable {
    /// `listen`'s host; nil: the host of `server.listen`.
    public var host: String?
    /// `listen`'s port; 0: one the system picks.
    public var port = 0
    /// `hosts`: the addresses written as ICE candidates (a NAT's public address, a container's
    /// host); empty: the bound address, or every interface's.
    public var hosts: [String] = []
    /// `tcp`: ICE over TCP (RFC 6544, passive) for viewers whose UDP is blocked, on the UDP
    /// port's host; 0 (`on`, the default): the UDP port's number where it is free, else one the
    /// system picks; nil: `off`; else that port.
    public var tcpPort: Int? = 0
    /// `ice_servers`: STUN and TURN servers offered to WebRTC clients.
    public var iceServers: [ICEServer] = []

    public init() {}

    /// The section; nil for `server.webrtc: off`.
    static func parse(_ node: Node, _ r: Configuration.Reader) throws(ConfigError) -> WebRTCServerSettings? {
        if case .scalar = node, try r.string(node, "server.webrtc") == "off" { return nil }
        var w = WebRTCServerSettings()
        let m = try r.mapping(node, "server.webrtc", allowed: ["listen", "hosts", "tcp", "ice_servers"])
        if let list = m["ice_servers"] { w.iceServers = try iceServers(list, r) }
        if let t = m["tcp"] {
            let v = try r.string(t, "server.webrtc.tcp")
            switch v.lowercased() {
            case "on", "true", "yes": w.tcpPort = 0
            case "off", "false", "no": w.tcpPort = nil
            default:
                guard let p = Int(v), (1...65535).contains(p) else {
                    throw ConfigError(file: r.file, path: "server.webrtc.tcp", problem: "expected on, off or a port from 1 to 65535, got \"\(v.prefix(100))\"")
                }
                w.tcpPort = p
            }
        }
        if let l = m["listen"] {
            (w.host, w.port) = try Configuration.hostPort(try r.string(l, "server.webrtc.listen"), path: "server.webrtc.listen", file: r.file)
        }
        if let h = m["hosts"] { w.hosts = try r.strings(h, "server.webrtc.hosts") }
        return w
    }

    /// `server.webrtc.ice_servers`: STUN and TURN servers offered to WebRTC clients, each with
    /// fixed credentials or coturn's shared secret (`use-auth-secret`), from which each client
    /// gets its own, valid for `ttl`.
    static func iceServers(_ node: Node, _ r: Configuration.Reader) throws(ConfigError) -> [ICEServer] {
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
}
