import Yams

/// Recording reads its own configuration section.
extension RecordSettings {
    /// The `record` section of a stream (`path` names it in errors).
    init(config node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) {
        let m = try r.mapping(node, path, allowed: ["path", "segment_duration", "keep", "max_bytes"])
        guard let p = m["path"] else { throw ConfigError(file: r.file, path: "\(path).path", problem: "missing") }
        self.init(path: try r.string(p, "\(path).path"))
        if let d = m["segment_duration"] { segmentDuration = try r.duration(d, "\(path).segment_duration", 1...86_400) }
        if let k = m["keep"] { keep = try r.duration(k, "\(path).keep", 1...(100 * 365 * 86_400)) }
        if let b = m["max_bytes"] { maxBytes = try r.bytes(b, "\(path).max_bytes") }
    }
}
