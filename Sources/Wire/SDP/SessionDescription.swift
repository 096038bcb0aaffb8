/// A session description (RFC 8866, with JSEP's attributes, RFC 8829), the one parser of them:
/// a camera's DESCRIBE answer (each media section's formats and control URL), and a WHEP
/// player's or WHIP publisher's offer (ICE credentials, DTLS fingerprint, per media section the
/// payload formats and their feedback). Text a peer controls: lines that do not parse are
/// skipped, sizes are capped, nothing traps.
public struct SessionDescription: Sendable, Equatable {
    public struct Format: Sendable, Equatable {
        public var payloadType: Int
        /// Lowercased encoding name (`h264`, `opus`, `pcmu`, `rtx` …).
        public var codec: String
        public var clockRate: Int
        /// As `a=rtpmap` gives them; nil when it does not (AAC's own configuration says).
        public var channels: Int?
        /// `a=fmtp:` parameters, keys lowercased.
        public var parameters: [String: String] = [:]
        /// `a=rtcp-fb:` values (`nack`, `nack pli`, `ccm fir`, `transport-cc` …).
        public var feedback: [String] = []

        public init(payloadType: Int, codec: String, clockRate: Int, channels: Int? = nil, parameters: [String: String] = [:]) {
            self.payloadType = payloadType
            self.codec = codec
            self.clockRate = clockRate
            self.channels = channels
            self.parameters = parameters
        }

        /// Static payload types (RFC 3551) a camera may use without `a=rtpmap`.
        static func staticType(_ pt: Int) -> Format {
            switch pt {
            case 0: return Format(payloadType: 0, codec: "pcmu", clockRate: 8000, channels: 1)
            case 8: return Format(payloadType: 8, codec: "pcma", clockRate: 8000, channels: 1)
            case 14: return Format(payloadType: 14, codec: "mpa", clockRate: 90000)
            case 26: return Format(payloadType: 26, codec: "jpeg", clockRate: 90000)
            case 33: return Format(payloadType: 33, codec: "mp2t", clockRate: 90000)
            default: return Format(payloadType: pt, codec: "", clockRate: 0)
            }
        }
    }

    public struct Media: Sendable, Equatable {
        /// `video`, `audio`, `application`.
        public var kind: String
        public var port: Int
        public var proto: String
        public var mid: String?
        /// `sendrecv`, `sendonly`, `recvonly`, `inactive` (default sendrecv).
        public var direction = "sendrecv"
        public var formats: [Format] = []
        public var iceUfrag: String?
        public var icePwd: String?
        public var fingerprint: String?
        public var setup: String?
        /// `a=ssrc:` values seen (a publisher's streams).
        public var ssrcs: [UInt32] = []
        public var rtcpMux = false
        /// `a=bundle-only` (RFC 8843): port 0 in the offer, yet active inside the bundle.
        public var bundleOnly = false
        /// Whether the section is offered: a port, or carried in the bundle.
        public var isActive: Bool { port != 0 || bundleOnly }
        /// `a=extmap:` ids by URI.
        public var extensions: [String: Int] = [:]
        /// `a=control:` (RTSP: where SETUP goes, relative to the base URL).
        public var control: String?
        /// `a=candidate:` lines (an answer's host candidates), at most 32.
        public var candidates: [Candidate] = []

        public init(kind: String, port: Int = 9, proto: String = "RTP/AVP", formats: [Format] = []) {
            self.kind = kind
            self.port = port
            self.proto = proto
            self.formats = formats
        }
    }

    /// An ICE candidate (RFC 8839): `foundation component transport priority address port typ type …`.
    public struct Candidate: Sendable, Equatable {
        /// Lowercased: `udp`, `tcp`.
        public var transport: String
        public var address: String
        public var port: Int
        public var type: String

        public init(transport: String, address: String, port: Int, type: String) {
            self.transport = transport
            self.address = address
            self.port = port
            self.type = type
        }
    }

    /// How much a text may hold, and what it must.
    public struct Limits: Sendable {
        public var maxBytes: Int
        /// Longer lines are left out.
        public var maxLine: Int
        /// `v=0` first, and at least one media section (an offer that is none is refused).
        public var strict: Bool
        /// A WHEP or WHIP peer's offer.
        public static let peer = Limits(maxBytes: 64 * 1024, maxLine: 4096, strict: true)
        /// A camera's DESCRIBE answer (cameras leave out `v=`, or describe no media while they
        /// boot; parameter sets in an fmtp line run long).
        public static let camera = Limits(maxBytes: 1 << 20, maxLine: 64 * 1024, strict: false)
    }

    public var iceUfrag: String?
    public var icePwd: String?
    /// `sha-256 AB:CD:…` as written (hash name lowercased).
    public var fingerprint: String?
    public var setup: String?
    /// `a=control:` at session level (RTSP's aggregate control URL).
    public var control: String?
    public var media: [Media] = []

    /// No media, no attributes: what a camera that describes nothing usable is taken as.
    public static let empty = SessionDescription()

    private init() {}

    /// Nil when the text is too large or, by the `.peer` limits, is not an SDP (`v=0` first)
    /// or has no media section.
    public init?(parsing text: String, limits: Limits = .peer) {
        guard text.utf8.count <= limits.maxBytes else { return nil }
        var sawVersion = !limits.strict
        // The attributes of a media section left out are not the previous section's.
        var skipping = false
        // By bytes: "\r\n" is one Character, which a split on "\n" would not see.
        for raw in text.utf8.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            let line = Substring(raw).trimmingASCIISpaces()
            guard line.utf8.count >= 2, line.utf8.count <= limits.maxLine else { continue }
            let key = line.utf8.first!, rest = line.dropFirst(2)
            guard line.utf8.dropFirst().first == UInt8(ascii: "=") else { continue }
            if !sawVersion {
                guard key == UInt8(ascii: "v"), rest == "0" else { return nil }
                sawVersion = true
                continue
            }
            switch key {
            case UInt8(ascii: "m"):
                let f = rest.split(separator: " ")
                skipping = f.count < 3 || media.count >= 16
                guard !skipping else { continue }
                var m = Media(kind: String(f[0].prefix(32)), port: Self.number(f[1], digits: 5) ?? 0, proto: String(f[2].prefix(64)))
                for pt in f.dropFirst(3).prefix(64) {
                    if let n = Self.number(pt, digits: 3), (0...127).contains(n) { m.formats.append(Format.staticType(n)) }
                }
                media.append(m)
            case UInt8(ascii: "a"):
                if !skipping { attribute(String(rest)) }
            default:
                continue
            }
        }
        guard sawVersion, !media.isEmpty || !limits.strict else { return nil }
    }

    private mutating func attribute(_ a: String) {
        let kv = a.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = kv[0].lowercasedASCII(), value = kv.count > 1 ? kv[1].trimmingASCIISpaces() : ""
        let inMedia = !media.isEmpty
        func setMedia(_ f: (inout Media) -> Void) {
            guard inMedia else { return }
            f(&media[media.count - 1])
        }
        switch name {
        case "ice-ufrag":
            let v = String(value.prefix(256))
            if inMedia { setMedia { $0.iceUfrag = v } } else { iceUfrag = v }
        case "ice-pwd":
            let v = String(value.prefix(256))
            if inMedia { setMedia { $0.icePwd = v } } else { icePwd = v }
        case "fingerprint":
            let p = value.split(separator: " ", maxSplits: 1)
            guard p.count == 2 else { return }
            let v = p[0].lowercasedASCII() + " " + String(p[1].prefix(200)).uppercasedASCII()
            if inMedia { setMedia { $0.fingerprint = v } } else { fingerprint = v }
        case "setup":
            let v = value.lowercasedASCII()
            if inMedia { setMedia { $0.setup = v } } else { setup = v }
        case "mid": setMedia { $0.mid = String(value.prefix(32)) }
        case "candidate":
            let f = value.split(separator: " ")
            guard f.count >= 8, f[6] == "typ", let port = Self.number(f[5], digits: 5), (1...65535).contains(port) else { return }
            let c = Candidate(transport: f[2].lowercasedASCII(), address: String(f[4].prefix(64)), port: port, type: String(f[7].prefix(16)))
            setMedia { m in if m.candidates.count < 32 { m.candidates.append(c) } }
        case "control":
            let v = String(value.prefix(1024))
            if inMedia { setMedia { $0.control = v } } else { control = v }
        case "sendrecv", "sendonly", "recvonly", "inactive": setMedia { $0.direction = name }
        case "rtcp-mux": setMedia { $0.rtcpMux = true }
        case "bundle-only": setMedia { $0.bundleOnly = true }
        case "rtpmap":
            // `96 H264/90000`, `111 opus/48000/2`
            let p = value.split(separator: " ", maxSplits: 1)
            guard p.count == 2, let pt = Self.number(p[0], digits: 3) else { return }
            let enc = p[1].split(separator: "/")
            guard let codec = enc.first else { return }
            // A clock rate that does not fit (over 1 MHz, or not a number) is none.
            let rate = enc.count > 1 ? Self.number(enc[1], digits: 7).flatMap { (1...1_000_000).contains($0) ? $0 : nil } ?? 0 : 0
            let channels = enc.count > 2 ? max(1, min(8, Self.number(enc[2], digits: 1) ?? 1)) : nil
            setMedia { m in
                guard let i = m.formats.firstIndex(where: { $0.payloadType == pt }) else { return }
                m.formats[i].codec = codec.prefix(32).lowercasedASCII()
                m.formats[i].clockRate = rate
                m.formats[i].channels = channels
            }
        case "fmtp":
            let p = value.split(separator: " ", maxSplits: 1)
            guard p.count == 2, let pt = Self.number(p[0], digits: 3) else { return }
            var params: [String: String] = [:]
            for kv in p[1].split(separator: ";").prefix(32) {
                let e = kv.split(separator: "=", maxSplits: 1)
                guard let k = e.first else { continue }
                // Values up to a line's length: parameter sets (`sprop-parameter-sets`, H.265's
                // `sprop-vps/sps/pps`) run long.
                params[k.trimmingASCIISpaces().lowercasedASCII()] = e.count > 1 ? String(e[1].trimmingASCIISpaces().prefix(4096)) : ""
            }
            setMedia { m in
                guard let i = m.formats.firstIndex(where: { $0.payloadType == pt }) else { return }
                m.formats[i].parameters = params
            }
        case "rtcp-fb":
            let p = value.split(separator: " ", maxSplits: 1)
            guard p.count == 2 else { return }
            let fb = p[1].lowercasedASCII()
            setMedia { m in
                for i in m.formats.indices where p[0] == "*" || Self.number(p[0], digits: 3) == m.formats[i].payloadType {
                    if m.formats[i].feedback.count < 16 { m.formats[i].feedback.append(String(fb.prefix(64))) }
                }
            }
        case "ssrc":
            guard let id = value.split(separator: " ").first, let big = Self.number(id, digits: 10), let n = UInt32(exactly: big) else { return }
            setMedia { m in if !m.ssrcs.contains(n), m.ssrcs.count < 16 { m.ssrcs.append(n) } }
        case "extmap":
            let p = value.split(separator: " ")
            guard p.count >= 2, let first = p[0].split(separator: "/").first, let id = Self.number(first, digits: 3) else { return }
            setMedia { m in if m.extensions.count < 32 { m.extensions[String(p[1].prefix(256))] = id } }
        default:
            return
        }
    }

    /// A decimal number of at most `digits` digits and nothing else (no sign, no space): a
    /// longer one is refused, not cut (`9600` is not payload type 96).
    static func number(_ text: some StringProtocol, digits: Int) -> Int? {
        guard (1...digits).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// ICE credentials of a media section, or the session's.
    public func credentials(_ m: Media) -> (ufrag: String, pwd: String)? {
        guard let u = m.iceUfrag ?? iceUfrag, let p = m.icePwd ?? icePwd, !u.isEmpty, !p.isEmpty else { return nil }
        return (u, p)
    }

    /// The DTLS fingerprint of a media section, or the session's.
    public func fingerprint(_ m: Media) -> String? { m.fingerprint ?? fingerprint }

    /// A control attribute resolved against the base URL (RFC 2326 C.1.1): absolute, `*`
    /// (the base itself), or relative.
    public static func resolve(control: String?, base: String) -> String {
        guard let c = control, !c.isEmpty, c != "*" else { return base }
        if c.hasPrefixIgnoringCase("rtsp://") || c.hasPrefixIgnoringCase("rtsps://") { return c }
        return base.hasSuffix("/") ? base + c : base + "/" + c
    }
}

extension Substring {
    func lowercasedASCII() -> String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    func uppercasedASCII() -> String {
        String(decoding: utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
    }
}

extension String {
    /// ASCII letters in capitals, nothing else touched (Foundation's `uppercased()` is locale-aware).
    public func uppercasedASCII() -> String { Substring(self).uppercasedASCII() }
}
