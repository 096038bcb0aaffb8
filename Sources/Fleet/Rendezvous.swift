import Crypto

/// Rendezvous (highest random weight) hashing: each stream goes to the live node whose
/// weight for it is highest. Every node computes the same order from the same live set, and
/// when a node joins or leaves only the streams it wins or held move.
public enum Rendezvous {
    /// The weight of `node` for `stream`: the first 8 bytes of SHA-256("stream\nnode").
    public static func weight(stream: String, node: String) -> UInt64 {
        let digest = SHA256.hash(data: Array("\(stream)\n\(node)".utf8))
        var w: UInt64 = 0
        for b in digest.prefix(8) { w = w << 8 | UInt64(b) }
        return w
    }

    /// `nodes` from the stream's first choice to its last (ties by name).
    public static func ranking(stream: String, nodes: some Sequence<String>) -> [String] {
        nodes.map { ($0, weight(stream: stream, node: $0)) }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
            .map(\.0)
    }
}
