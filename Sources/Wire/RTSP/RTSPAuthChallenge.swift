/// A challenge of a `WWW-Authenticate` header (RFC 2617 §1.2, §3.2.1), as LiveRelay's RTSP
/// client reads it from a camera's 401: Basic, or Digest with MD5. The text is the camera's: it
/// is walked byte by byte, a bounded number of parameters is taken, and nothing here traps.
public enum RTSPAuthChallenge: Sendable, Equatable {
    /// `Basic realm="…"`.
    case basic
    /// `Digest realm="…", nonce="…"`, MD5 (the algorithm when none is named).
    case digest(Digest)

    /// What a Digest challenge gives the answer.
    public struct Digest: Sendable, Equatable {
        public var realm: String
        public var nonce: String
        /// Echoed unchanged in every answer.
        public var opaque: String?
        /// The server offers `qop=auth`: answers then carry a nonce count and a client nonce.
        public var qopAuth: Bool

        public init(realm: String, nonce: String, opaque: String? = nil, qopAuth: Bool = false) {
            self.realm = realm
            self.nonce = nonce
            self.opaque = opaque
            self.qopAuth = qopAuth
        }
    }

    /// At most this many parameters are read from one challenge.
    public static let maxParameters = 32

    /// The challenge to answer among a 401's `WWW-Authenticate` values: the first Digest one
    /// (nil when it cannot be answered: no realm or nonce, or an algorithm other than MD5),
    /// else Basic; nil when neither is offered.
    public init?(choosingFrom values: [String]) {
        if let digest = values.first(where: { $0.hasPrefixIgnoringCase("digest") }) {
            guard let c = RTSPAuthChallenge(parsing: digest) else { return nil }
            self = c
        } else if values.contains(where: { $0.hasPrefixIgnoringCase("basic") }) {
            self = .basic
        } else {
            return nil
        }
    }

    /// One challenge; nil for another scheme, or a Digest without realm or nonce or with an
    /// algorithm other than MD5.
    public init?(parsing value: some StringProtocol) {
        let text = value.substring
        if text.hasPrefixIgnoringCase("basic") {
            self = .basic
            return
        }
        guard text.hasPrefixIgnoringCase("digest"),
              let start = text.utf8.index(text.startIndex, offsetBy: 6, limitedBy: text.endIndex) else { return nil }
        // "digest" is ASCII: `start` is on a scalar boundary.
        let p = Self.parameters(text[start...])
        guard let realm = p["realm"], let nonce = p["nonce"] else { return nil }
        if let algorithm = p["algorithm"], !algorithm.equalsIgnoringCase("MD5") { return nil }
        let qopAuth = p["qop"].map { $0.split(separator: ",").contains { $0.trimmingASCIISpaces() == "auth" } } ?? false
        self = .digest(Digest(realm: realm, nonce: nonce, opaque: p["opaque"], qopAuth: qopAuth))
    }

    /// `key=value, key="quoted, value"` pairs, keys lowercased (ASCII), spaces around keys and
    /// unquoted values trimmed; at most `maxParameters` (a later repeat of a key wins). A text
    /// that stops inside a quoted value gives the value up to its end.
    public static func parameters(_ text: some StringProtocol) -> [String: String] {
        let s = text.substring
        let u = s.utf8
        var out: [String: String] = [:]
        var i = u.startIndex
        var taken = 0
        while i < u.endIndex, taken < maxParameters {
            while i < u.endIndex, u[i] == 0x20 || u[i] == 0x2C { i = u.index(after: i) }   // ' ', ','
            guard let eq = u[i...].firstIndex(of: 0x3D) else { break }                        // '='
            let key = String(decoding: s[i..<eq].trimmingASCIISpaces().utf8.map(asciiLower), as: UTF8.self)
            var j = u.index(after: eq)
            let value: Substring
            if j < u.endIndex, u[j] == 0x22 {                                                 // '"'
                j = u.index(after: j)
                let close = u[j...].firstIndex(of: 0x22) ?? u.endIndex
                value = s[j..<close]
                i = close < u.endIndex ? u.index(after: close) : close
            } else {
                let close = u[j...].firstIndex(of: 0x2C) ?? u.endIndex
                value = s[j..<close].trimmingASCIISpaces()
                i = close
            }
            out[key] = String(value)
            taken += 1
        }
        return out
    }
}
