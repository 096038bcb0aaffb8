public import Mux
import Yams
import Wire

/// One rung of a stream's ladder (`streams.NAME.renditions[i]`): the source decoded once,
/// scaled and encoded again, readable as the stream `NAME_RENDITION` (RTSP, HLS, snapshots).
/// The source itself is always the top rung, untouched.
public struct RenditionSettings: Sendable, Hashable {
    /// `name`: letters, digits, - and _ (`360p`).
    public var name: String
    /// `height` (the width follows the source's shape, even), or `size: WxH`; 0: the source's
    /// own size (the H.264 fallback).
    public var height: Int
    public var width: Int?
    /// `bitrate` in kbit/s (`800k`, `1.5M`, `800`); 0: chosen from the picture's size and rate.
    public var bitrateKbps: Int
    /// `fps`: at most this many pictures a second (nil: the source's).
    public var fps: Double?
    /// `encoder`: auto (VAAPI, NVENC, then libx264), vaapi, nvenc or software.
    public var encoder: EncoderPreference = .auto
    /// `record: true`: recorded too (under the stream's `record.path`).
    public var record = false

    public init(name: String, height: Int, bitrateKbps: Int) {
        self.name = name
        self.height = height
        self.bitrateKbps = bitrateKbps
    }

    /// The H.264 fallback (`h264_fallback`): the source's own size, for viewers that cannot
    /// decode the source's codec (H.265 in most browsers); no rung is scaled for it.
    public var isFallback: Bool { height == 0 }
    public static let fallbackName = "h264"

    /// The height encoded for a parent `sourceHeight` tall (even).
    public func height(source sourceHeight: Int) -> Int { height > 0 ? height : max(2, sourceHeight / 2 * 2) }

    /// kbit/s for a picture of this size and rate: the configured bit rate, or about 0.1 bit a
    /// pixel (640x360 at 30 fps: 690k), from 300k to 20M.
    public func bitrate(width: Int, height: Int, fps: Double) -> Int {
        if bitrateKbps > 0 { return bitrateKbps }
        let bits = Double(width) * Double(height) * max(1, min(fps, 120)) * 0.1 / 1000
        return Int(saturating: min(20_000, max(300, bits.rounded())))
    }

    /// `streams.NAME.h264_fallback`: `true` (the source's size, the bit rate from it), `false`,
    /// or `{bitrate, encoder}`; nil when off.
    static func fallback(_ node: Node, path: String, _ r: Configuration.Reader) throws(ConfigError) -> RenditionSettings? {
        var rung = RenditionSettings(name: fallbackName, height: 0, bitrateKbps: 0)
        if case .mapping = node {
            let m = try r.mapping(node, path, allowed: ["bitrate", "encoder"])
            if let b = m["bitrate"] { rung.bitrateKbps = try Configuration.kbps(b, "\(path).bitrate", r) }
            if let e = m["encoder"] { rung.encoder = try r.choice(e, "\(path).encoder", EncoderPreference.self) }
            return rung
        }
        return try r.bool(node, path) ? rung : nil
    }

    /// The stream a rendition of `stream` is served as.
    public static func streamName(_ stream: String, _ rendition: String) -> String { "\(stream)_\(rendition)" }
    /// The source URL of a rendition's stream.
    public static func sourceURL(_ stream: String, _ rendition: String) -> String { "\(scheme)://\(stream)/\(rendition)" }
    public static let scheme = "rendition"

    /// `rendition://STREAM/NAME` → (STREAM, NAME).
    public static func parse(url: String) -> (stream: String, rendition: String)? {
        guard url.hasPrefix("\(scheme)://") else { return nil }
        let rest = url.dropFirst(scheme.utf8.count + 3)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let s = String(rest[..<slash]), r = String(rest[rest.index(after: slash)...])
        guard !s.isEmpty, !r.isEmpty else { return nil }
        return (s, r)
    }
}

extension Configuration.Stream {
    /// This stream, its sub stream (`NAME_sub`) and one stream per rendition (`NAME_RENDITION`),
    /// as the engine runs them.
    public func expanded() -> [Configuration.Stream] {
        var out = [self]
        if let sub = substreamStream() { out.append(sub) }
        for r in renditions {
            var d = Configuration.Stream(name: RenditionSettings.streamName(name, r.name), source: RenditionSettings.sourceURL(name, r.name))
            d.title = "\(title ?? name) \(r.name)"
            d.group = group
            d.description = description
            d.keywords = keywords
            // Encoded only while something consumes it.
            d.onDemandIdle = 10
            d.preview = preview
            d.hls = hls
            if r.record { d.record = record }
            d.partOf = name
            d.madeByAPI = madeByAPI
            out.append(d)
        }
        return out
    }
}

extension Configuration {
    /// `streams.NAME.renditions`: a list of rungs; each key checked, names unique.
    static func renditions(_ node: Node, path: String, _ r: Reader) throws(ConfigError) -> [RenditionSettings] {
        guard case .sequence(let seq) = node else { throw ConfigError(file: r.file, path: path, problem: "expected a list of {name, height, bitrate}") }
        var out: [RenditionSettings] = []
        for (i, n) in seq.enumerated() {
            let p = "\(path)[\(i)]"
            let m = try r.mapping(n, p, allowed: ["name", "height", "size", "bitrate", "fps", "encoder", "record"])
            guard let nameNode = m["name"] else { throw ConfigError(file: r.file, path: "\(p).name", problem: "missing") }
            let name = try r.string(nameNode, "\(p).name")
            guard isStreamName(name), name.utf8.count <= 32 else { throw ConfigError(file: r.file, path: "\(p).name", problem: "1 to 32 letters, digits, - and _") }
            guard !out.contains(where: { $0.name == name }) else { throw ConfigError(file: r.file, path: "\(p).name", problem: "\"\(name)\" is named twice") }
            var height: Int?, width: Int?
            if let h = m["height"] { height = Int(saturating: try r.number(h, "\(p).height", 16...4320)) }
            if let s = m["size"] {
                let text = try r.string(s, "\(p).size")
                let parts = text.split(separator: "x")
                guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (16...7680).contains(w), (16...4320).contains(h) else {
                    throw ConfigError(file: r.file, path: "\(p).size", problem: "expected WIDTHxHEIGHT such as 640x360, got \"\(text.prefix(40))\"")
                }
                guard height == nil else { throw ConfigError(file: r.file, path: "\(p).size", problem: "give height or size, not both") }
                width = w
                height = h
            }
            guard let h = height else { throw ConfigError(file: r.file, path: "\(p).height", problem: "missing (or size: WxH)") }
            guard h % 2 == 0, (width ?? 0) % 2 == 0 else { throw ConfigError(file: r.file, path: "\(p).\(width == nil ? "height" : "size")", problem: "H.264 needs even sizes") }
            guard let b = m["bitrate"] else { throw ConfigError(file: r.file, path: "\(p).bitrate", problem: "missing (e.g. 800k)") }
            var rung = RenditionSettings(name: name, height: h, bitrateKbps: try kbps(b, "\(p).bitrate", r))
            rung.width = width
            if let f = m["fps"] { rung.fps = try r.number(f, "\(p).fps", 1...240) }
            if let e = m["encoder"] { rung.encoder = try r.choice(e, "\(p).encoder", EncoderPreference.self) }
            if let rec = m["record"] { rung.record = try r.bool(rec, "\(p).record") }
            out.append(rung)
        }
        return out
    }

    /// `800k`, `1.5M`, `800` (kbit/s).
    static func kbps(_ node: Node, _ path: String, _ r: Reader) throws(ConfigError) -> Int {
        let s = try r.string(node, path).trimmingASCIISpaces()
        var value: Double?
        if let v = Double(s) { value = v } else if s.hasSuffix("k") || s.hasSuffix("K") { value = Double(s.dropLast()) } else if s.hasSuffix("M") || s.hasSuffix("m") {
            value = Double(s.dropLast()).map { $0 * 1000 }
        }
        guard let value, value >= 32, value <= 100_000 else {
            throw ConfigError(file: r.file, path: path, problem: "expected a bit rate from 32k to 100M such as 800k or 1.5M, got \"\(s.prefix(40))\"")
        }
        return Int(saturating: value.rounded())
    }
}
