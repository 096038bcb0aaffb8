/// An `rtsp://` or `rtsps://` URL (RFC 2326 §3.2, RFC 3986) taken apart, for both sides:
/// LiveRelay's RTSP client learns where to connect, what to ask for and the credentials (kept
/// out of every request line, message and log); its RTSP server learns which stream a request
/// names. The text may be a peer's (a request URI): it is walked byte by byte, bounded, and
/// nothing here traps.
public struct RTSPURL: Sendable, Equatable, CustomStringConvertible {
    public enum Scheme: String, Sendable {
        case rtsp, rtsps

        /// 554 for RTSP, 322 for RTSP over TLS.
        public var defaultPort: UInt16 { self == .rtsp ? 554 : 322 }
    }

    /// A longer text is not taken as a URL.
    public static let maxLength = 16 << 10

    public let scheme: Scheme
    /// Percent-decoded (as written when its escapes are not valid UTF-8); `""` for `rtsp://@h`
    /// or `rtsp://:pass@h`.
    public let user: String?
    /// Percent-decoded (as written when its escapes are not valid UTF-8).
    public let password: String?
    /// A name or an address; IPv6 without its brackets.
    public let host: String
    /// The port given, else the scheme's.
    public let port: UInt16
    /// Host and port as written (IPv6 in brackets), without credentials.
    public let authority: String
    /// Path and query as written, `/` when the URL has neither; the fragment left out.
    public let pathAndQuery: String

    /// Nil unless the text is an absolute `rtsp` or `rtsps` URL (scheme in any case) with a
    /// host and, if a port is given, a number in 1…65535; control characters are refused.
    public init?(_ text: some StringProtocol) {
        let s = text.substring
        guard s.utf8.count <= Self.maxLength, !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }),
              let separator = s.utf8Range(of: "://") else { return nil }
        let name = s[..<separator.lowerBound]
        let kind: Scheme
        if name.equalsIgnoringCase("rtsp") {
            kind = .rtsp
        } else if name.equalsIgnoringCase("rtsps") {
            kind = .rtsps
        } else {
            return nil
        }
        scheme = kind
        let rest = s[separator.upperBound...]
        // Every delimiter looked for is ASCII: each index below is on a scalar boundary.
        let authorityEnd = rest.utf8.firstIndex(where: { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 }) ?? rest.endIndex   // '/', '?', '#'
        var hostPort = rest[..<authorityEnd]
        if let at = hostPort.utf8.lastIndex(of: 0x40) {                                                     // '@'
            let info = hostPort[..<at]
            hostPort = hostPort[hostPort.utf8.index(after: at)...]
            if let colon = info.utf8.firstIndex(of: 0x3A) {                                                 // ':'
                user = Self.percentDecoded(info[..<colon]) ?? String(info[..<colon])
                let secret = info[info.utf8.index(after: colon)...]
                password = Self.percentDecoded(secret) ?? String(secret)
            } else {
                user = Self.percentDecoded(info) ?? String(info)
                password = nil
            }
        } else {
            user = nil
            password = nil
        }
        guard let (h, p) = Self.hostAndPort(hostPort) else { return nil }
        host = h
        port = p ?? kind.defaultPort
        authority = String(hostPort)
        var tail = rest[authorityEnd...]
        if let hash = tail.utf8.firstIndex(of: 0x23) { tail = tail[..<hash] }
        pathAndQuery = tail.isEmpty ? "/" : String(tail)
    }

    /// The URL without credentials (and without fragment): what request lines carry and logs show.
    public var withoutCredentials: String { "\(scheme.rawValue)://\(authority)\(pathAndQuery)" }

    public var description: String { withoutCredentials }

    /// The path as written (percent-encoded), without the query.
    public var path: Substring {
        pathAndQuery[..<(pathAndQuery.utf8.firstIndex(of: 0x3F) ?? pathAndQuery.endIndex)]
    }

    /// The query as written, without its `?`; nil when there is none.
    public var query: Substring? {
        guard let q = pathAndQuery.utf8.firstIndex(of: 0x3F) else { return nil }
        return pathAndQuery[pathAndQuery.utf8.index(after: q)...]
    }

    /// The path of a request URI as an RTSP server reads it: the absolute form's path
    /// (`rtsp://host:port/cam/streamid=1` gives `/cam/streamid=1`), or the text itself in the
    /// path form (`/cam`, `*`); the query left out. Nil for an absolute URI that is not an
    /// `rtsp`/`rtsps` URL.
    public static func requestPath(_ uri: some StringProtocol) -> Substring? {
        let s = uri.substring
        if s.utf8Contains("://") { return RTSPURL(s)?.path }
        return s[..<(s.utf8.firstIndex(of: 0x3F) ?? s.endIndex)]
    }

    /// `%XX` escapes decoded (RFC 3986 §2.1); nil for a `%` not followed by two hex digits, or
    /// bytes that are not UTF-8.
    public static func percentDecoded(_ text: some StringProtocol) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var bytes = text.utf8.makeIterator()
        while let b = bytes.next() {
            guard b == 0x25 else { out.append(b); continue }
            guard let high = bytes.next().flatMap(Self.hexDigit), let low = bytes.next().flatMap(Self.hexDigit) else { return nil }
            out.append(high << 4 | low)
        }
        let decoded = String(decoding: out, as: UTF8.self)
        // Invalid UTF-8 comes out with replacement characters: not the same bytes.
        return decoded.utf8.elementsEqual(out) ? decoded : nil
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; nil for an empty host or a port that is not
    /// a number in 1…65535.
    private static func hostAndPort(_ text: Substring) -> (String, UInt16?)? {
        let u = text.utf8
        if u.first == 0x5B {                                                                // '['
            guard let close = u.firstIndex(of: 0x5D) else { return nil }                    // ']'
            let host = text[u.index(after: u.startIndex)..<close]
            let after = text[u.index(after: close)...]
            guard !host.isEmpty else { return nil }
            if after.isEmpty { return (String(host), nil) }
            guard after.utf8.first == 0x3A, let port = portNumber(after[after.utf8.index(after: after.startIndex)...]) else { return nil }
            return (String(host), port)
        }
        if let colon = u.lastIndex(of: 0x3A) {
            let host = text[..<colon]
            guard !host.isEmpty, let port = portNumber(text[u.index(after: colon)...]) else { return nil }
            return (String(host), port)
        }
        guard !text.isEmpty else { return nil }
        return (String(text), nil)
    }

    private static func portNumber(_ text: Substring) -> UInt16? {
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let p = UInt16(text), p > 0 else { return nil }
        return p
    }
}
