import Foundation
import Wire

/// The parts of a session description (RFC 8866) an RTSP client needs: each media section's
/// kind, payload type, encoding, clock, format parameters and control URL.
struct SDP {
    struct Media {
        var kind: String
        var payloadType: Int
        var encoding: String = ""
        var clockRate: Int = 0
        var channels: Int?
        /// `a=fmtp` parameters, keys lowercased.
        var fmtp: [String: String] = [:]
        var control: String?
    }

    var control: String?
    var media: [Media] = []

    /// Static payload types (RFC 3551) a camera may use without `a=rtpmap`.
    private static let staticTypes: [Int: (String, Int, Int?)] = [0: ("PCMU", 8000, 1), 8: ("PCMA", 8000, 1), 14: ("MPA", 90000, nil), 26: ("JPEG", 90000, nil), 33: ("MP2T", 90000, nil)]

    init(_ text: String) {
        var current: Media?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingASCIISpaces()
            guard line.count >= 2, line.dropFirst().first == "=" else { continue }
            let value = String(line.dropFirst(2))
            switch line.first {
            case "m":
                if let m = current { media.append(m) }
                let f = value.split(separator: " ")
                let pt = f.count > 3 ? Int(f[3]) ?? -1 : -1
                var m = Media(kind: f.first.map(String.init) ?? "", payloadType: pt)
                if let s = Self.staticTypes[pt] { m.encoding = s.0; m.clockRate = s.1; m.channels = s.2 }
                current = m
            case "a":
                let (name, arg) = value.firstIndex(of: ":").map { (String(value[..<$0]), String(value[value.index(after: $0)...])) } ?? (value, "")
                switch name {
                case "control":
                    if current != nil { current?.control = arg } else { control = arg }
                case "rtpmap":
                    guard var m = current else { continue }
                    let f = arg.split(separator: " ", maxSplits: 1)
                    guard f.count == 2, Int(f[0]) == m.payloadType else { continue }
                    let e = f[1].split(separator: "/")
                    m.encoding = e.first.map { $0.uppercased() } ?? ""
                    m.clockRate = e.count > 1 ? Int(e[1]) ?? 0 : 0
                    m.channels = e.count > 2 ? Int(e[2]) : nil
                    current = m
                case "fmtp":
                    guard var m = current else { continue }
                    let f = arg.split(separator: " ", maxSplits: 1)
                    guard f.count == 2, Int(f[0]) == m.payloadType else { continue }
                    for p in f[1].split(separator: ";") {
                        let kv = p.split(separator: "=", maxSplits: 1)
                        guard let k = kv.first else { continue }
                        m.fmtp[k.trimmingASCIISpaces().lowercased()] = kv.count > 1 ? String(kv[1].trimmingASCIISpaces()) : ""
                    }
                    current = m
                default: break
                }
            default: break
            }
        }
        if let m = current { media.append(m) }
    }

    /// A control attribute resolved against the base URL (RFC 2326 C.1.1).
    static func resolve(_ control: String?, base: String) -> String {
        guard let c = control, !c.isEmpty, c != "*" else { return base }
        if c.lowercased().hasPrefix("rtsp://") { return c }
        return base.hasSuffix("/") ? base + c : base + "/" + c
    }
}
