import Yams

/// `server.rtsp`: every stream re-served at `rtsp://HOST:PORT/{stream}`.
public struct RTSPServerSettings: Sendable, Equatable {
    /// `listen`.
    public var host: String
    public var port: Int
    /// `session_timeout`: seconds a client may stay silent (60, RFC 2326's default).
    public var sessionTimeout = 60

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(config node: Node, _ r: Configuration.Reader) throws(ConfigError) {
        let m = try r.mapping(node, "server.rtsp", allowed: ["listen", "session_timeout"])
        guard let l = m["listen"] else { throw ConfigError(file: r.file, path: "server.rtsp.listen", problem: "missing (HOST:PORT)") }
        let (host, port) = try Configuration.hostPort(try r.string(l, "server.rtsp.listen"), path: "server.rtsp.listen", file: r.file)
        self.init(host: host, port: port)
        if let t = m["session_timeout"] { sessionTimeout = Int(try r.duration(t, "server.rtsp.session_timeout", 2...3600)) }
    }
}
