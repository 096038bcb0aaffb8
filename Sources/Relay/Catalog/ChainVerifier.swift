public import Foundation

/// Re-hashes a stream's recording files against the catalog and follows the chain: the first
/// file that is missing, altered, out of the chain, or on disk without being catalogued.
public enum ChainVerifier {
    public enum Finding: Sendable, Equatable, CustomStringConvertible {
        case missing(path: String, index: Int)
        case altered(path: String, index: Int)
        /// The catalog's own row does not follow from the one before (the catalog was edited).
        case chainBroken(path: String, index: Int)
        /// A recording file of the stream that the catalog does not list.
        case extra(path: String)

        public var description: String {
            switch self {
            case .missing(let p, let i): "segment \(i + 1) is missing: \(p)"
            case .altered(let p, let i): "segment \(i + 1) was altered (its SHA-256 differs): \(p)"
            case .chainBroken(let p, let i): "the chain breaks at segment \(i + 1) (the catalog was altered): \(p)"
            case .extra(let p): "a file the catalog does not list: \(p)"
            }
        }
    }

    /// Checks `chain` (the stream's segments in catalogue order); nil when every file is there,
    /// unaltered and in the chain, and no other file of the stream sits beside them.
    /// With `within`, only the files overlapping that range are re-hashed (and looked for
    /// beside them); the chain itself is followed through every row, from the first.
    public static func verify(stream: String, chain: [RecordedSegment], within: ClosedRange<Date>? = nil) -> Finding? {
        var previous: String?
        for (i, s) in chain.enumerated() {
            if let within, !(s.start <= within.upperBound && s.end >= within.lowerBound) {
                guard s.chained(after: previous) == s.chain else { return .chainBroken(path: s.path, index: i) }
                previous = s.chain
                continue
            }
            // Deleted by retention: nothing to re-hash, but the chain runs on through its row.
            if s.deletedAt != nil {
                guard s.chained(after: previous) == s.chain else { return .chainBroken(path: s.path, index: i) }
                previous = s.chain
                continue
            }
            guard FileManager.default.fileExists(atPath: s.path) else { return .missing(path: s.path, index: i) }
            guard RecordedSegment.hash(file: s.path) == s.sha256 else { return .altered(path: s.path, index: i) }
            guard s.chained(after: previous) == s.chain else { return .chainBroken(path: s.path, index: i) }
            previous = s.chain
        }
        let listed = Set(chain.filter { $0.deletedAt == nil }.map { ($0.path as NSString).standardizingPath })
        let directories = Set(chain.map { ($0.path as NSString).deletingLastPathComponent })
        for dir in directories.sorted() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            for name in names.sorted() {
                guard let n = RecordingFileName(name), n.stream == stream else { continue }
                // Outside the range asked for (by the second the name gives): not looked at.
                if let within, n.began > within.upperBound || n.began.addingTimeInterval(86_400) < within.lowerBound { continue }
                let path = ((dir as NSString).appendingPathComponent(name) as NSString).standardizingPath
                if !listed.contains(path) { return .extra(path: path) }
            }
        }
        return nil
    }
}
