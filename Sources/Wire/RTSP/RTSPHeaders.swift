/// RTSP headers (RFC 2326 §12) as values, parsed once for both sides: LiveRelay's RTSP client
/// reads them from a camera's answers, its RTSP server from a player's requests. Every parser
/// here takes text a peer controls: it returns nil or leaves a field out, and never traps.

/// `Session: 12345678;timeout=60`.
public struct RTSPSessionHeader: Sendable, Equatable {
    /// The session identifier, as the server gave it.
    public var id: String
    /// The server's idle timeout in whole seconds, if it gave a usable one (1…86 400). A camera
    /// that says `timeout=1e20`, `inf`, `nan`, `-5` or nothing gives nil: the default applies.
    public var timeout: Int?
    /// A `timeout=` the server gave that is not usable, as it was written (at most 64 bytes).
    public var unusableTimeout: String?

    public init(id: String, timeout: Int? = nil) {
        self.id = id
        self.timeout = timeout
    }

    /// Nil when there is no identifier.
    public init?(parsing value: some StringProtocol) {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        guard let first = parts.first else { return nil }
        let id = first.trimmingASCIISpaces()
        guard !id.isEmpty, id.utf8.count <= 256 else { return nil }
        self.id = String(id)
        for p in parts.dropFirst() {
            let kv = p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, kv[0].trimmingASCIISpaces().equalsIgnoringCase("timeout") else { continue }
            // RFC 2326 says delta-seconds; some cameras write 60.0.
            if let d = PeerNumber.decimal(kv[1], in: 1...86_400) {
                timeout = Int(saturating: d)
            } else {
                unusableTimeout = String(kv[1].prefix(64))
            }
        }
    }

    public var headerValue: String { timeout.map { "\(id);timeout=\($0)" } ?? id }
}

/// `Public: OPTIONS, DESCRIBE, SETUP, …` — the methods a server takes.
public enum RTSPPublicHeader {
    /// The methods named, uppercased (ASCII).
    public static func methods(_ value: some StringProtocol) -> Set<String> {
        var out = Set<String>()
        for m in value.split(separator: ",") {
            let t = m.trimmingASCIISpaces()
            guard !t.isEmpty, t.utf8.count <= 64 else { continue }
            out.insert(String(decoding: t.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self))
            if out.count >= 64 { break }
        }
        return out
    }
}

/// One transport of a `Transport` header (RFC 2326 §12.39): a player offers a list of them in
/// SETUP, the server answers with the one it chose.
public struct RTSPTransportSpec: Sendable, Equatable {
    /// Two numbers written `a-b` (or `a`, meaning `a-(a+1)`): RTP and RTCP ports or channels.
    public struct Pair<T: FixedWidthInteger & Sendable>: Sendable, Equatable {
        public var rtp: T
        public var rtcp: T
        public init(rtp: T, rtcp: T) { self.rtp = rtp; self.rtcp = rtcp }

        /// Nil unless each number fits `T` (and is in `range`); `a` alone needs `a+1` to fit.
        static func parse(_ text: some StringProtocol, in range: ClosedRange<T>) -> Pair? {
            let n = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = n.first, let a = PeerNumber.integer(first, in: range) else { return nil }
            if n.count > 1 {
                guard let b = PeerNumber.integer(n[1], in: range) else { return nil }
                return Pair(rtp: a, rtcp: b)
            }
            let (b, o) = a.addingReportingOverflow(1)
            guard !o, range.contains(b) else { return nil }
            return Pair(rtp: a, rtcp: b)
        }

        var text: String { "\(rtp)-\(rtcp)" }
    }

    /// `RTP/AVP`, `RTP/AVP/UDP`, `RTP/AVP/TCP`, `RTP/SAVP`…, uppercased.
    public var protocolSpec: String
    public var isMulticast: Bool = false
    public var interleaved: Pair<UInt8>?
    public var clientPort: Pair<UInt16>?
    public var serverPort: Pair<UInt16>?
    /// The address media comes from, when the server says.
    public var source: String?
    public var ssrc: UInt32?
    public var mode: String?

    public init(protocolSpec: String) { self.protocolSpec = protocolSpec }

    /// RTP over the control connection (`RTP/AVP/TCP`).
    public var isInterleaved: Bool { protocolSpec.hasSuffix("/TCP") }
    /// An RTP profile LiveRelay speaks.
    public var isRTP: Bool { protocolSpec.hasPrefix("RTP/AVP") }

    /// Every transport in the header, in the order given (at most 16; unreadable ones left out).
    public static func parseList(_ value: some StringProtocol) -> [RTSPTransportSpec] {
        var out: [RTSPTransportSpec] = []
        for offer in value.split(separator: ",") {
            if let t = RTSPTransportSpec(parsing: offer) { out.append(t) }
            if out.count >= 16 { break }
        }
        return out
    }

    /// One transport: `RTP/AVP;unicast;client_port=5000-5001`. Nil without a protocol.
    public init?(parsing offer: some StringProtocol) {
        let parts = offer.split(separator: ";")
        guard let spec = parts.first?.trimmingASCIISpaces(), !spec.isEmpty, spec.utf8.count <= 32 else { return nil }
        protocolSpec = String(decoding: spec.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        for p in parts.dropFirst() {
            let kv = p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let rawKey = kv.first else { continue }
            let key = rawKey.trimmingASCIISpaces()
            let value = kv.count > 1 ? kv[1].trimmingASCIISpaces() : ""
            if key.equalsIgnoringCase("multicast") { isMulticast = true }
            else if key.equalsIgnoringCase("unicast") { isMulticast = false }
            else if key.equalsIgnoringCase("interleaved") { interleaved = Pair.parse(value, in: 0...255) }
            else if key.equalsIgnoringCase("client_port") { clientPort = Pair.parse(value, in: 1...65535) }
            else if key.equalsIgnoringCase("server_port") { serverPort = Pair.parse(value, in: 1...65535) }
            else if key.equalsIgnoringCase("source") { source = value.isEmpty || value.utf8.count > 255 ? nil : String(value) }
            else if key.equalsIgnoringCase("ssrc") { ssrc = value.utf8.count <= 8 ? UInt32(value, radix: 16) : nil }
            else if key.equalsIgnoringCase("mode") {
                let m = value.utf8.filter { $0 != 0x22 }
                mode = m.count <= 32 ? String(decoding: m, as: UTF8.self) : nil
            }
        }
    }

    /// The header's text for this transport.
    public var headerValue: String {
        var s = protocolSpec + (isMulticast ? ";multicast" : ";unicast")
        if let interleaved { s += ";interleaved=" + interleaved.text }
        if let clientPort { s += ";client_port=" + clientPort.text }
        if let serverPort { s += ";server_port=" + serverPort.text }
        if let source { s += ";source=" + source }
        if let ssrc { s += ";ssrc=" + String(ssrc, radix: 16, uppercase: true) }
        if let mode { s += ";mode=" + mode }
        return s
    }
}
