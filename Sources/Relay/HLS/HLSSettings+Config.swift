import Yams

/// HLS reads its own configuration section.
extension HLSSettings {
    /// The `hls` section of a stream (`path` names it in errors).
    init(config node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) {
        let m = try r.mapping(node, path, allowed: ["variant", "segment_duration", "part_duration", "part_hold_back", "segment_count", "playlist", "directory", "push"])
        var h = Self(variant: try m["variant"].map { n throws(ConfigError) in try r.choice(n, "\(path).variant", HLSSettings.Variant.self) } ?? .mpegts)
        if let d = m["segment_duration"] { h.segmentDuration = try r.duration(d, "\(path).segment_duration", 0.1...60) }
        if let d = m["part_duration"] { h.partDuration = try r.duration(d, "\(path).part_duration", 0.05...5) }
        if let b = m["part_hold_back"] { h.partHoldBack = try r.number(b, "\(path).part_hold_back", 2...10) }
        if h.variant == .lowLatency && h.partDuration > h.segmentDuration {
            throw ConfigError(file: r.file, path: "\(path).part_duration", problem: "must not be longer than segment_duration")
        }
        if let c = m["segment_count"] { h.segmentCount = Int(try r.number(c, "\(path).segment_count", 2...100_000)) }
        if let t = m["playlist"] { h.playlist = try r.choice(t, "\(path).playlist", HLSSettings.PlaylistType.self) }
        if let d = m["directory"] { h.directory = try r.string(d, "\(path).directory") }
        if let u = m["push"] {
            let url = try r.string(u, "\(path).push")
            guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
                throw ConfigError(file: r.file, path: "\(path).push", problem: "expected an http:// or https:// URL")
            }
            h.push = url.hasSuffix("/") ? url : url + "/"
        }
        self = h
    }
}
