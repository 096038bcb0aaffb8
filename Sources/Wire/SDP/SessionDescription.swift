/// A session description (RFC 8866, with JSEP's attributes, RFC 8829), the one SDP type: read
/// from a camera's DESCRIBE answer (each media section's formats and control URL) and from a
/// WHEP player's or WHIP publisher's offer (ICE credentials, DTLS fingerprint, per media section
/// the payload formats and their feedback); written (`text`, in SessionDescription+Writing.swift)
/// for WebRTC answers, the bench's offers and the RTSP server's DESCRIBE answers. Text a peer
/// controls: lines that do not parse are skipped, sizes are capped, nothing traps. What it reads
/// it writes back: `SessionDescription(parsing: d.text, limits: l) == d` for every `d` it parsed
/// with limits `l` (when the text written stays within them: `a=rtcp-fb:*` is written once per
/// format). Attributes it does not model are kept as written, in order.
public struct SessionDescription: Sendable, Equatable {
    /// `o=` (RFC 8866 §5.2): `- 0 0 IN IP4 127.0.0.1`.
    public struct Origin: Sendable, Equatable {
        public var username: String
        public var sessionID: UInt64
        public var sessionVersion: UInt64
        /// `IP4` or `IP6` (the network type is `IN`).
        public var addressType: String
        public var address: String

        public init(username: String = "-", sessionID: UInt64 = 0, sessionVersion: UInt64 = 0, addressType: String = "IP4", address: String = "127.0.0.1") {
            self.username = username
            self.sessionID = sessionID
            self.sessionVersion = sessionVersion
            self.addressType = addressType
            self.address = address
        }

        /// Nil unless six fields with numbers where RFC 8866 has them (a session id past 64 bits
        /// is none).
        init?(parsing text: Substring) {
            let f = SessionDescription.fields(text)
            guard f.count == 6, f[3] == "IN", let id = Self.number(f[1]), let version = Self.number(f[2]) else { return nil }
            self.init(username: String(f[0].prefix(64)), sessionID: id, sessionVersion: version,
                      addressType: String(f[4].prefix(8)), address: String(f[5].prefix(64)))
        }

        static func number(_ text: Substring) -> UInt64? {
            guard (1...20).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Nil, not a trap, past UInt64.max.
            return UInt64(text)
        }
    }

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

        public init(payloadType: Int, codec: String, clockRate: Int, channels: Int? = nil, parameters: [String: String] = [:], feedback: [String] = []) {
            self.payloadType = payloadType
            self.codec = codec
            self.clockRate = clockRate
            self.channels = channels
            self.parameters = parameters
            self.feedback = feedback
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
        /// `c=` of the section, as written (`IN IP4 0.0.0.0`).
        public var connection: String?
        /// `b=` lines, as written (`AS:2000`), at most 4.
        public var bandwidths: [String] = []
        public var mid: String?
        /// `sendrecv`, `sendonly`, `recvonly`, `inactive` (default sendrecv, which is not written).
        public var direction = "sendrecv"
        public var formats: [Format] = []
        public var iceUfrag: String?
        public var icePwd: String?
        public var fingerprint: String?
        public var setup: String?
        /// `a=ssrc:` values seen (a publisher's streams).
        public var ssrcs: [UInt32] = []
        /// The `cname:` of the `a=ssrc:` lines (RFC 5576), one for the section.
        public var cname: String?
        /// `a=msid:` (RFC 8830: `stream track`), also written on each `a=ssrc:`.
        public var msid: String?
        public var rtcpMux = false
        /// `a=rtcp-rsize` (RFC 5506).
        public var rtcpReducedSize = false
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
        /// `a=end-of-candidates` (RFC 8840).
        public var endOfCandidates = false
        /// The section's other attributes, as written after `a=` (`rtcp:9 IN IP4 0.0.0.0`,
        /// `framesize:96 640-480` …), at most 32 of at most 1 KiB.
        public var attributes: [String] = []

        public init(kind: String, port: Int = 9, proto: String = "RTP/AVP", formats: [Format] = []) {
            self.kind = kind
            self.port = port
            self.proto = proto
            self.formats = formats
        }
    }

    /// An ICE candidate (RFC 8839): `foundation component transport priority address port typ
    /// type [tcptype t]` (other extensions are not kept).
    public struct Candidate: Sendable, Equatable {
        public var foundation: String
        public var component: Int
        /// Lowercased: `udp`, `tcp`.
        public var transport: String
        public var priority: UInt32
        public var address: String
        public var port: Int
        public var type: String
        /// A TCP candidate's `tcptype` (RFC 6544: `active`, `passive`, `so`).
        public var tcpType: String?

        public init(foundation: String = "1", component: Int = 1, transport: String, priority: UInt32 = 0,
                    address: String, port: Int, type: String, tcpType: String? = nil) {
            self.foundation = foundation
            self.component = component
            self.transport = transport
            self.priority = priority
            self.address = address
            self.port = port
            self.type = type
            self.tcpType = tcpType
        }

        /// Nil unless the fields RFC 8839 requires are there and in range.
        init?(parsing value: Substring) {
            let f = SessionDescription.fields(value)
            guard f.count >= 8, f[6] == "typ",
                  let component = SessionDescription.number(f[1], digits: 3), (1...256).contains(component),
                  let priority = SessionDescription.number(f[3], digits: 10).flatMap({ UInt32(exactly: $0) }),
                  let port = SessionDescription.number(f[5], digits: 5), (1...65535).contains(port) else { return nil }
            var tcpType: String?
            // Extensions come in name-value pairs after the type.
            for i in stride(from: 8, to: f.count - 1, by: 2) where f[i] == "tcptype" {
                tcpType = String(f[i + 1].prefix(16))
            }
            self.init(foundation: String(f[0].prefix(32)), component: component, transport: f[2].lowercasedASCII(), priority: priority,
                      address: String(f[4].prefix(64)), port: port, type: String(f[7].prefix(16)), tcpType: tcpType)
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

    public var origin = Origin()
    /// `s=` (`-` when the text has none).
    public var sessionName = "-"
    /// `c=` at session level, as written (`IN IP4 0.0.0.0`).
    public var connection: String?
    /// `a=ice-lite` (RFC 8445 §2.5): the peer answers checks and makes none.
    public var iceLite = false
    /// The mids of `a=group:BUNDLE` (RFC 8843), the first such group.
    public var bundle: [String] = []
    public var iceUfrag: String?
    public var icePwd: String?
    /// `sha-256 AB:CD:…` as written (hash name lowercased).
    public var fingerprint: String?
    public var setup: String?
    /// `a=control:` at session level (RTSP's aggregate control URL).
    public var control: String?
    /// The session's other attributes, as written after `a=` (`msid-semantic: WMS x`,
    /// `tool:libavformat 61.7.100`, `range:npt=0-` …), at most 32 of at most 1 KiB.
    public var attributes: [String] = []
    public var media: [Media] = []

    /// No media, no attributes: what a camera that describes nothing usable is taken as.
    public static let empty = SessionDescription()

    public init(origin: Origin = Origin(), sessionName: String = "-", media: [Media] = []) {
        self.origin = origin
        self.sessionName = sessionName
        self.media = media
    }

    /// Nil when the text is too large or, by the `.peer` limits, is not an SDP (`v=0` first)
    /// or has no media section.
    public init?(parsing text: String, limits: Limits = .peer) {
        guard text.utf8.count <= limits.maxBytes else { return nil }
        var sawVersion = !limits.strict
        // The lines of a media section left out are not the previous section's.
        var skipping = false
        // By bytes: "\r\n" is one Character, which a split on "\n" would not see.
        for raw in text.utf8.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            let line = Substring(raw).trimmingASCIISpaces()
            guard line.utf8.count >= 2, line.utf8.count <= limits.maxLine, let key = line.utf8.first,
                  line.utf8.dropFirst().first == UInt8(ascii: "=") else { continue }
            let rest = line.dropFirst(2)
            if !sawVersion {
                guard key == UInt8(ascii: "v"), rest == "0" else { return nil }
                sawVersion = true
                continue
            }
            switch key {
            case UInt8(ascii: "m"):
                let f = Self.fields(rest)
                skipping = f.count < 3 || media.count >= 16
                guard !skipping else { continue }
                var m = Media(kind: String(f[0].prefix(32)), port: Self.number(f[1], digits: 5) ?? 0, proto: String(f[2].prefix(64)))
                for pt in f.dropFirst(3).prefix(64) {
                    // A payload type listed twice is one format.
                    if let n = Self.number(pt, digits: 3), (0...127).contains(n), !m.formats.contains(where: { $0.payloadType == n }) {
                        m.formats.append(Format.staticType(n))
                    }
                }
                media.append(m)
            case UInt8(ascii: "o"):
                if media.isEmpty, let o = Origin(parsing: rest) { origin = o }
            case UInt8(ascii: "s"):
                if media.isEmpty { sessionName = Self.clip(rest, 256) }
            case UInt8(ascii: "c"):
                guard !skipping else { continue }
                let c = Self.clip(rest, 128)
                if let i = media.indices.last { media[i].connection = c } else { connection = c }
            case UInt8(ascii: "b"):
                // At session level (a conference's total) it is not kept.
                guard !skipping, let i = media.indices.last, media[i].bandwidths.count < 4 else { continue }
                media[i].bandwidths.append(Self.clip(rest, 64))
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
        guard let first = kv.first else { return }
        let name = first.lowercasedASCII(), value = kv.count > 1 ? kv[1].trimmingASCIISpaces() : ""
        let last = media.indices.last
        // What is not modelled, or not at this level, is kept as written.
        func keep() {
            guard !a.isEmpty, a.utf8.count <= 1024 else { return }
            if let i = last {
                if media[i].attributes.count < 32 { media[i].attributes.append(a) }
            } else if attributes.count < 32 {
                attributes.append(a)
            }
        }
        func setMedia(_ f: (inout Media) -> Void) {
            if let i = last { f(&media[i]) } else { keep() }
        }
        switch name {
        case "ice-ufrag":
            let v = Self.clip(value, 256)
            if let i = last { media[i].iceUfrag = v } else { iceUfrag = v }
        case "ice-pwd":
            let v = Self.clip(value, 256)
            if let i = last { media[i].icePwd = v } else { icePwd = v }
        case "fingerprint":
            let p = value.split(separator: " ", maxSplits: 1)
            let hash = p.count == 2 ? Self.clip(p[1], 200) : ""
            guard !hash.isEmpty else { return }
            let v = p[0].lowercasedASCII() + " " + hash.uppercasedASCII()
            if let i = last { media[i].fingerprint = v } else { fingerprint = v }
        case "setup":
            let v = value.lowercasedASCII()
            if let i = last { media[i].setup = v } else { setup = v }
        case "control":
            let v = Self.clip(value, 1024)
            if let i = last { media[i].control = v } else { control = v }
        case "ice-lite":
            if last == nil { iceLite = true } else { keep() }
        case "group":
            let p = Self.fields(value)
            if last == nil, bundle.isEmpty, p.count > 1, let semantics = p.first, semantics.equalsIgnoringCase("BUNDLE") {
                bundle = p.dropFirst().prefix(16).map { String($0.prefix(32)) }
            } else {
                keep()
            }
        case "mid":
            let v = Self.clip(value, 32)
            setMedia { $0.mid = v }
        case "msid":
            let v = Self.clip(value, 256)
            setMedia { $0.msid = v }
        case "candidate":
            guard let c = Candidate(parsing: value) else { return }
            setMedia { m in if m.candidates.count < 32 { m.candidates.append(c) } }
        case "end-of-candidates": setMedia { $0.endOfCandidates = true }
        case "sendrecv", "sendonly", "recvonly", "inactive": setMedia { $0.direction = name }
        case "rtcp-mux": setMedia { $0.rtcpMux = true }
        case "rtcp-rsize": setMedia { $0.rtcpReducedSize = true }
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
                guard let k = e.first?.trimmingASCIISpaces(), !k.isEmpty else { continue }
                // Values as long as the line lets them be (the limits' `maxLine`): parameter sets
                // (`sprop-parameter-sets`, H.265's `sprop-vps/sps/pps`) and Vorbis's
                // `configuration` run long, and are written back whole.
                params[k.lowercasedASCII()] = e.count > 1 ? String(e[1].trimmingASCIISpaces()) : ""
            }
            setMedia { m in
                guard let i = m.formats.firstIndex(where: { $0.payloadType == pt }) else { return }
                m.formats[i].parameters = params
            }
        case "rtcp-fb":
            let p = value.split(separator: " ", maxSplits: 1)
            let fb = p.count == 2 ? Self.clip(p[1].lowercasedASCII(), 64) : ""
            guard !fb.isEmpty else { return }
            setMedia { m in
                for i in m.formats.indices where p[0] == "*" || Self.number(p[0], digits: 3) == m.formats[i].payloadType {
                    if m.formats[i].feedback.count < 16 { m.formats[i].feedback.append(fb) }
                }
            }
        case "ssrc":
            // `1234 cname:x`; the other attributes of an SSRC are the section's.
            let p = value.split(separator: " ", maxSplits: 1)
            guard let id = p.first, let big = Self.number(id, digits: 10), let n = UInt32(exactly: big) else { return }
            let cname = p.count > 1 && p[1].hasPrefixIgnoringCase("cname:") ? Self.clip(p[1].dropFirst(6), 256) : nil
            setMedia { m in
                if !m.ssrcs.contains(n), m.ssrcs.count < 16 { m.ssrcs.append(n) }
                if let cname { m.cname = cname }
            }
        case "extmap":
            let p = Self.fields(value)
            guard p.count >= 2, let first = p[0].split(separator: "/").first, let id = Self.number(first, digits: 3) else { return }
            setMedia { m in if m.extensions.count < 32 { m.extensions[String(p[1].prefix(256))] = id } }
        default:
            keep()
        }
    }

    /// The space-separated fields of a line (a tab separates too: no field holds a character
    /// the line's trimming would take away).
    static func fields(_ text: Substring) -> [Substring] {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" })
    }

    /// At most `n` characters, without spaces at either end (a cut may leave one, which the
    /// line's trimming would not give back when the text is read again).
    static func clip(_ text: some StringProtocol, _ n: Int) -> String {
        String(text.prefix(n).trimmingASCIISpaces())
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
