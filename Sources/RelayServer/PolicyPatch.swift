import Relay

import Foundation

/// A PATCH body applied to a sink's policy.
enum PolicyPatch {
    /// `{"ordering": "arrival", "freshness": "latest", "depth": 1, "max_age_ms": 250}`, every key
    /// optional; any other key is refused by name.
    struct Body: Decodable, Sendable {
        var ordering: String?
        var freshness: String?
        var depth: Int?
        var maxAgeMs: Int?

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        static let keys = ["ordering", "freshness", "depth", "max_age_ms"]

        init(ordering: String? = nil, freshness: String? = nil, depth: Int? = nil, maxAgeMs: Int? = nil) {
            self.ordering = ordering
            self.freshness = freshness
            self.depth = depth
            self.maxAgeMs = maxAgeMs
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Key.self)
            if let unknown = c.allKeys.first(where: { !Self.keys.contains($0.stringValue) }) {
                throw PatchError("unknown key \"\(unknown.stringValue.prefix(64))\" (expected ordering, freshness, depth, max_age_ms)")
            }
            ordering = try c.decodeIfPresent(String.self, forKey: Key(stringValue: "ordering"))
            freshness = try c.decodeIfPresent(String.self, forKey: Key(stringValue: "freshness"))
            do { depth = try c.decodeIfPresent(Int.self, forKey: Key(stringValue: "depth")) } catch {
                throw PatchError("depth: expected a whole number from 1 to 10000")
            }
            do { maxAgeMs = try c.decodeIfPresent(Int.self, forKey: Key(stringValue: "max_age_ms")) } catch {
                throw PatchError("max_age_ms: expected a whole number of milliseconds from 1 to 600000")
            }
        }
    }

    /// A body from JSON bytes, or why not (one line).
    static func body(_ data: Data) -> Result<Body, PatchError> {
        do { return .success(try JSONDecoder().decode(Body.self, from: data)) } catch let e as PatchError {
            return .failure(e)
        } catch {
            return .failure(PatchError("expected a JSON object such as {\"ordering\":\"arrival\",\"freshness\":\"latest\",\"depth\":1}: \(describe(error))"))
        }
    }

    /// A decoding error in one line: which key, what was wrong.
    static func describe(_ error: any Error) -> String {
        if let e = error as? PatchError { return e.message }
        guard let d = error as? DecodingError else { return "not JSON" }
        switch d {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
            let path = c.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not a JSON object of the expected shape" : "\(path.prefix(100)): wrong type"
        @unknown default: return "not JSON"
        }
    }

    /// - Parameter batching: the output works a keyframe interval at a time (classic HLS, a
    ///   recorder): `latest` would leave it one packet per GOP, so it is refused.
    /// - Parameter pictures: the output shows decoded pictures (a preview, an in-process
    ///   subscriber), the only kind that can hold its last clean one (`clean`).
    static func apply(_ body: Body, to current: SinkPolicy, batching: Bool = false, pictures: Bool = false) -> Result<SinkPolicy, PatchError> {
        var policy = current
        if let o = body.ordering {
            guard let v = Ordering(rawValue: o) else { return .failure(PatchError("ordering: expected arrival or presentation")) }
            policy.ordering = v
        }
        // The same bounds as the configuration's.
        let depth = body.depth
        if let depth, !(1...10_000).contains(depth) { return .failure(PatchError("depth: expected a whole number from 1 to 10000")) }
        let maxAge = body.maxAgeMs
        if let maxAge, !(1...600_000).contains(maxAge) { return .failure(PatchError("max_age_ms: expected a whole number of milliseconds from 1 to 600000")) }
        let name: String? = body.freshness ?? policy.freshness.name
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

    struct PatchError: Error, Sendable {
        let message: String
        /// The value is well formed but this output cannot take it (409, not 400).
        let conflict: Bool
        init(_ m: String, conflict: Bool = false) { message = m; self.conflict = conflict }
    }
}


