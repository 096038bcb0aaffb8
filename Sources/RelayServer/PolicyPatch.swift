import Relay

/// A PATCH body applied to a sink's policy.
enum PolicyPatch {
    /// - Parameter batching: the output works a keyframe interval at a time (classic HLS, a
    ///   recorder): `latest` would leave it one packet per GOP, so it is refused.
    /// - Parameter pictures: the output shows decoded pictures (a preview, an in-process
    ///   subscriber), the only kind that can hold its last clean one (`clean`).
    static func apply(_ object: [String: Any], to current: SinkPolicy, batching: Bool = false, pictures: Bool = false) -> Result<SinkPolicy, PatchError> {
        let allowed: Set<String> = ["ordering", "freshness", "depth", "max_age_ms"]
        if let unknown = object.keys.first(where: { !allowed.contains($0) }) {
            return .failure(PatchError("unknown key \"\(unknown)\" (expected ordering, freshness, depth, max_age_ms)"))
        }
        var policy = current
        if let o = object["ordering"] {
            guard let s = o as? String, let v = Ordering(rawValue: s) else { return .failure(PatchError("ordering: expected arrival or presentation")) }
            policy.ordering = v
        }
        // The same bounds as the configuration's.
        let depth = object["depth"] as? Int
        if object["depth"] != nil, !(1...10_000).contains(depth ?? 0) { return .failure(PatchError("depth: expected a whole number from 1 to 10000")) }
        let maxAge = object["max_age_ms"] as? Int
        if object["max_age_ms"] != nil, !(1...600_000).contains(maxAge ?? 0) { return .failure(PatchError("max_age_ms: expected a whole number of milliseconds from 1 to 600000")) }
        let name = object["freshness"].map { $0 as? String } ?? policy.freshness.name
        switch name {
        case "latest": policy.freshness = .latest(count: depth ?? { if case .latest(let n) = current.freshness { n } else { 1 } }())
        case "max_age": policy.freshness = .maxAge(milliseconds: maxAge ?? { if case .maxAge(let ms) = current.freshness { ms } else { 250 } }())
        case "lossless": policy.freshness = .lossless(capacity: depth ?? { if case .lossless(let c) = current.freshness { c } else { 64 } }())
        case "clean":
            guard pictures else { return .failure(PatchError("freshness: clean holds decoded pictures; only a preview or frame subscription can take it", conflict: true)) }
            policy.freshness = .clean
        default: return .failure(PatchError("freshness: expected latest, max_age, lossless or clean"))
        }
        if batching, case .latest = policy.freshness {
            return .failure(PatchError("freshness: latest would keep one packet per keyframe interval on this output; use lossless or max_age", conflict: true))
        }
        return .success(policy)
    }

    struct PatchError: Error {
        let message: String
        /// The value is well formed but this output cannot take it (409, not 400).
        let conflict: Bool
        init(_ m: String, conflict: Bool = false) { message = m; self.conflict = conflict }
    }
}


