public import Foundation

/// Checks HLS media playlists as a strict player would, across successive reloads: target
/// duration never exceeded and never changed, parts within the part target, media sequence
/// numbers only going up, PROGRAM-DATE-TIME on every segment. Collects problems as text.
public final class PlaylistChecker: @unchecked Sendable {
    // Safety: used from one test thread at a time.
    public private(set) var problems: [String] = []
    public private(set) var reloads = 0
    public private(set) var maxDiscontinuities = 0
    public private(set) var lastSequence = -1
    private var targetDuration: Int?
    private var lastMediaSequence = -1
    public private(set) var ended = false

    public init() {}

    public struct Parsed: Sendable {
        public var targetDuration: Int?
        public var partTarget: Double?
        public var mediaSequence = 0
        public var segments: [(uri: String, duration: Double, pdt: Bool, discontinuity: Bool)] = []
        public var parts: [(uri: String, duration: Double)] = []
        public var preloadHint: String?
        public var serverControl: String?
        public var ended = false
        /// Segments a delta update left out (EXT-X-SKIP): the first listed is mediaSequence + skipped.
        public var skipped = 0
    }

    public static func parse(_ text: String) -> Parsed {
        var p = Parsed()
        var pdt = false, disc = false, extinf: Double?
        for line in text.split(separator: "\n").map(String.init) {
            func attr(_ key: String) -> String? {
                guard let r = line.range(of: key + "=") else { return nil }
                var v = line[r.upperBound...]
                if v.hasPrefix("\"") { v = v.dropFirst(); return String(v.prefix { $0 != "\"" }) }
                return String(v.prefix { $0 != "," })
            }
            if line.hasPrefix("#EXT-X-TARGETDURATION:") { p.targetDuration = Int(line.dropFirst(22)) }
            else if line.hasPrefix("#EXT-X-PART-INF:") { p.partTarget = attr("PART-TARGET").flatMap(Double.init) }
            else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") { p.mediaSequence = Int(line.dropFirst(22)) ?? -1 }
            else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") { pdt = true }
            else if line == "#EXT-X-DISCONTINUITY" { disc = true }
            else if line.hasPrefix("#EXTINF:") { extinf = Double(line.dropFirst(8).prefix { $0 != "," }) }
            else if line.hasPrefix("#EXT-X-PART:") { p.parts.append((attr("URI") ?? "", attr("DURATION").flatMap(Double.init) ?? -1)) }
            else if line.hasPrefix("#EXT-X-PRELOAD-HINT:") { p.preloadHint = attr("URI") }
            else if line.hasPrefix("#EXT-X-SERVER-CONTROL:") { p.serverControl = line }
            else if line.hasPrefix("#EXT-X-SKIP:") { p.skipped = attr("SKIPPED-SEGMENTS").flatMap { Int($0) } ?? -1 }
            else if line == "#EXT-X-ENDLIST" { p.ended = true }
            else if !line.hasPrefix("#"), !line.isEmpty, let d = extinf {
                p.segments.append((line, d, pdt, disc))
                pdt = false; disc = false; extinf = nil
            }
        }
        return p
    }

    /// Checks one reload of the playlist.
    public func check(_ text: String, lowLatency: Bool = false) {
        reloads += 1
        guard text.hasPrefix("#EXTM3U") else { problems.append("not a playlist: \(text.prefix(80))"); return }
        let p = Self.parse(text)
        guard let td = p.targetDuration else { problems.append("no EXT-X-TARGETDURATION"); return }
        if let t = targetDuration, t != td { problems.append("EXT-X-TARGETDURATION changed from \(t) to \(td)") }
        targetDuration = td
        if p.mediaSequence < lastMediaSequence { problems.append("media sequence went back from \(lastMediaSequence) to \(p.mediaSequence)") }
        lastMediaSequence = p.mediaSequence
        for (i, s) in p.segments.enumerated() {
            if Int(s.duration.rounded()) > td { problems.append("\(s.uri) lasts \(s.duration) s > target \(td)") }
            if !s.pdt { problems.append("\(s.uri) has no PROGRAM-DATE-TIME") }
            let seq = p.mediaSequence + p.skipped + i
            if seq > lastSequence { lastSequence = seq }
        }
        maxDiscontinuities = max(maxDiscontinuities, p.segments.filter(\.discontinuity).count)
        if lowLatency {
            guard let pt = p.partTarget else { problems.append("no EXT-X-PART-INF"); return }
            for part in p.parts where part.duration > pt + 0.0005 { problems.append("\(part.uri) lasts \(part.duration) s > part target \(pt)") }
            if p.serverControl?.contains("CAN-BLOCK-RELOAD=YES") != true { problems.append("no CAN-BLOCK-RELOAD") }
            if p.preloadHint == nil && !p.ended { problems.append("no EXT-X-PRELOAD-HINT") }
        }
        if p.ended { ended = true }
    }
}
