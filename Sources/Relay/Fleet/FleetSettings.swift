public import Foundation
import Yams
import Wire
import MediaCore

/// `catalog.postgres` and `node`: this process is one node of a fleet that shares one
/// PostgreSQL database (streams, recordings index, node registry, camera leases).
public struct FleetSettings: Sendable, Equatable {
    /// `catalog.postgres`: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`.
    public var postgres: String
    /// `node.name`: unique in the fleet (letters, digits, - and _).
    public var node: String
    /// `node.url`: where viewers and the other nodes reach this node's HTTP server
    /// (redirects point there). Default: `http://` + `server.listen`.
    public var url: String?
    /// `node.rtsp_url`: where the other nodes pull this node's streams (`server.rtsp.listen`
    /// by default; pulling needs it).
    public var rtspURL: String?
    /// `node.lease`: how long a camera lease lasts without renewal; a dead node's cameras move
    /// this long after its last renewal. Renewed every `lease / 5`.
    public var lease: Double = 2.5
    /// `node.pull_credentials`: `USER:PASSWORD` a node gives the owner's RTSP server when it
    /// pulls a stream from it (a user with `read` there, where `auth` is on).
    public var pullCredentials: String?

    public init(postgres: String, node: String) {
        self.postgres = postgres
        self.node = node
    }

    /// The node's own directory under a stream's `record.path`: nodes never write, nor
    /// recover, each other's files, though the paths are shared.
    public func recordDirectory(_ base: String) -> String { (base as NSString).appendingPathComponent(node) }
}

extension Configuration {
    /// Reads `node` once `catalog.postgres` is known.
    static func fleetSettings(postgres: String?, node: Node?, _ r: Reader) throws(ConfigError) -> FleetSettings? {
        let file = r.file
        guard let node else {
            if postgres != nil { throw ConfigError(file: file, path: "node", problem: "missing: catalog.postgres needs node.name (this node's name in the fleet)") }
            return nil
        }
        guard let postgres else { throw ConfigError(file: file, path: "node", problem: "needs catalog.postgres (the fleet's shared database)") }
        let m = try r.mapping(node, "node", allowed: ["name", "url", "rtsp_url", "lease", "pull_credentials"])
        guard let n = m["name"] else { throw ConfigError(file: file, path: "node.name", problem: "missing") }
        let name = try r.string(n, "node.name")
        guard isStreamName(name), name.utf8.count <= 64 else {
            throw ConfigError(file: file, path: "node.name", problem: "1 to 64 letters, digits, - and _")
        }
        var f = FleetSettings(postgres: postgres, node: name)
        if let u = m["url"] {
            let url = try r.string(u, "node.url")
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
                throw ConfigError(file: file, path: "node.url", problem: "expected an http:// or https:// URL, got \"\(url.prefix(100))\"")
            }
            f.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        if let u = m["rtsp_url"] {
            let url = try r.string(u, "node.rtsp_url")
            guard url.hasPrefix("rtsp://"), URL(string: url)?.host != nil else {
                throw ConfigError(file: file, path: "node.rtsp_url", problem: "expected an rtsp:// URL, got \"\(url.prefix(100))\"")
            }
            f.rtspURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        if let l = m["lease"] { f.lease = try r.duration(l, "node.lease", 1...60) }
        if let c = m["pull_credentials"] {
            let text = try r.string(c, "node.pull_credentials")
            guard let colon = text.utf8.firstIndex(of: 0x3A), colon != text.utf8.startIndex else {
                throw ConfigError(file: file, path: "node.pull_credentials", problem: "expected USER:PASSWORD")
            }
            f.pullCredentials = text
        }
        return f
    }

    /// `catalog.postgres`, checked for its form (its password is one of `Configuration.secrets`).
    static func postgresURL(_ node: Node, _ r: Reader) throws(ConfigError) -> String {
        let url = try r.string(node, "catalog.postgres")
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://"), let u = URLComponents(string: url), u.host != nil,
              u.user != nil, u.path.utf8.count > 1 else {
            throw ConfigError(file: r.file, path: "catalog.postgres", problem: "expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
        }
        return url
    }
}
