import Yams

/// The preview reads its own configuration section.
extension PreviewSettings {
    /// The `preview` section of a stream (`path` names it in errors).
    init(config node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) {
        let m = try r.mapping(node, path, allowed: ["ordering", "freshness", "depth", "max_age_ms", "size", "fps", "quality"])
        var p = Self()
        var ordering = Ordering.arrival
        if let o = m["ordering"] { ordering = try r.choice(o, "\(path).ordering", Ordering.self) }
        let depth = try m["depth"].map { n throws(ConfigError) in Int(try r.number(n, "\(path).depth", 1...10_000)) } ?? 1
        let maxAge = try m["max_age_ms"].map { n throws(ConfigError) in Int(try r.number(n, "\(path).max_age_ms", 1...600_000)) } ?? 250
        var freshness = Freshness.latest(count: depth)
        if let f = m["freshness"] {
            let name = try r.string(f, "\(path).freshness")
            switch name {
            case "latest": freshness = .latest(count: depth)
            case "max_age": freshness = .maxAge(milliseconds: maxAge)
            case "lossless": freshness = .lossless(capacity: max(depth, 32))
            case "clean": freshness = .clean
            default: throw ConfigError(file: r.file, path: "\(path).freshness", problem: "expected latest, max_age, lossless or clean, got \"\(name)\"")
            }
        }
        p.policy = SinkPolicy(ordering: ordering, freshness: freshness)
        if let s = m["size"] {
            let text = try r.string(s, "\(path).size")
            let wh = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard wh.count == 2, (16...7680).contains(wh[0]), (16...4320).contains(wh[1]) else {
                throw ConfigError(file: r.file, path: "\(path).size", problem: "expected WIDTHxHEIGHT, got \"\(text)\"")
            }
            p.width = wh[0]; p.height = wh[1]
        }
        if let f = m["fps"] { p.fps = try r.number(f, "\(path).fps", 0.1...240) }
        if let q = m["quality"] { p.quality = Int(try r.number(q, "\(path).quality", 1...100)) }
        self = p
    }
}
