import Yams
import MediaCore
import Foundation

/// One `forward` entry: a destination URL; for `rtmps://` the certificate authority its
/// server's certificate must chain to (`ca_file`; else the system's, `/etc/ssl/certs`); for a
/// WHIP endpoint (`whip://host/path`: HTTPS, `whip+http://…`: plain HTTP on loopback, or an
/// `https://` URL) the bearer token it takes. Written as the URL alone, or as
/// `{url: …, ca_file: …, bearer_token: …}`.
public struct ForwardTarget: Sendable, Hashable {
    public var url: String
    /// A PEM file of the CA (or the self-signed certificate) pinned for this destination.
    public var caFile: String?
    /// WHIP: `Authorization: Bearer …` on the offer.
    public var bearerToken: String?

    public init(url: String, caFile: String? = nil, bearerToken: String? = nil) {
        self.url = url
        self.caFile = caFile
        self.bearerToken = bearerToken
    }

    static let schemes = ["rtmp://", "rtmps://", "srt://", "rtsp://", "udp://", "rtp://", "tcp://", "whip://", "whip+http://", "https://", "http://"]

    /// A WHIP endpoint: pushed over WebRTC (the WebRTC module's `WHIPPusher`), not by FFmpeg.
    public var isWHIP: Bool {
        let lower = url.lowercased()
        return ["whip://", "whip+http://", "https://", "http://"].contains { lower.hasPrefix($0) }
    }

    /// The WHIP endpoint's HTTP URL.
    public var whipEndpoint: String {
        let lower = url.lowercased()
        if lower.hasPrefix("whip+http://") { return "http://" + url.dropFirst("whip+http://".count) }
        if lower.hasPrefix("whip://") { return "https://" + url.dropFirst("whip://".count) }
        return url
    }

    /// `streams.NAME.forward[i]`.
    init(config node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) {
        if case .mapping = node {
            let m = try r.mapping(node, path, allowed: ["url", "ca_file", "bearer_token"])
            guard let u = m["url"] else { throw ConfigError(file: r.file, path: "\(path).url", problem: "missing") }
            url = try r.string(u, "\(path).url")
            if let c = m["ca_file"] {
                let file = try r.string(c, "\(path).ca_file")
                guard FileManager.default.isReadableFile(atPath: file) else {
                    throw ConfigError(file: r.file, path: "\(path).ca_file", problem: "\(file) cannot be read")
                }
                caFile = file
            }
            if let t = m["bearer_token"] { bearerToken = try r.string(t, "\(path).bearer_token") }
        } else {
            url = try r.string(node, path)
        }
        let lower = url.lowercased()
        guard Self.schemes.contains(where: { lower.hasPrefix($0) }) else {
            throw ConfigError(file: r.file, path: node.isMapping ? "\(path).url" : path,
                              problem: "expected an rtmp://, rtmps://, srt://, rtsp://, udp://, rtp://, tcp:// or WHIP (whip://, https://) URL, got \"\(Redactor.masking(url, hideStreamKey: true).text)\"")
        }
        if caFile != nil && !lower.hasPrefix("rtmps://") {
            throw ConfigError(file: r.file, path: "\(path).ca_file", problem: "only an rtmps:// destination checks a certificate")
        }
        if bearerToken != nil && !isWHIP {
            throw ConfigError(file: r.file, path: "\(path).bearer_token", problem: "only a WHIP destination takes a bearer token")
        }
    }

    /// The list under `forward`: a sequence of entries, or one URL.
    static func list(_ node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) -> [ForwardTarget] {
        guard case .sequence(let seq) = node else { return [try ForwardTarget(config: node, path: path, r)] }
        var out: [ForwardTarget] = []
        for (i, n) in seq.enumerated() { out.append(try ForwardTarget(config: n, path: "\(path)[\(i)]", r)) }
        return out
    }
}

extension Node {
    var isMapping: Bool { if case .mapping = self { true } else { false } }
}
