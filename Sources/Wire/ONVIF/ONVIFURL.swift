/// A stream's `onvif://user:pass@host[:port][/profile]` source: where the camera's device
/// service is (HTTP, port 80 unless given, `/onvif/device_service`), the credentials for its
/// UsernameToken, and which media profile is the main stream (its token or name; the first
/// profile when none is given).
public struct ONVIFURL: Sendable, Equatable {
    public let user: String?
    public let password: String?
    public let host: String
    public let port: UInt16
    /// Host and port as an HTTP URL writes them (IPv6 in brackets).
    public let authority: String
    /// The profile named in the path, percent-decoded; nil for none.
    public let profile: String?

    public init?(_ text: some StringProtocol) {
        let s = String(text)
        guard s.hasPrefixIgnoringCase("onvif://") else { return nil }
        // The same authority rules as an RTSP URL: checked ports, IPv6 in brackets, no control characters.
        guard let u = RTSPURL("rtsp://" + s.dropFirst("onvif://".count)) else { return nil }
        user = u.user
        password = u.password
        host = u.host
        let explicitPort = !u.authority.hasSuffix("]") && u.authority.utf8.contains(0x3A) && (u.authority.utf8.first != 0x5B || u.authority.utf8Contains("]:"))
        port = explicitPort ? u.port : 80
        let bare = u.host.utf8.contains(0x3A) ? "[\(u.host)]" : u.host
        authority = port == 80 ? bare : "\(bare):\(port)"
        let path = u.path.utf8.first == 0x2F ? u.path.dropFirst() : u.path
        profile = path.isEmpty ? nil : (RTSPURL.percentDecoded(path) ?? String(path))
    }

    /// The device service: `http://host[:port]/onvif/device_service`.
    public var deviceService: String { "http://\(authority)/onvif/device_service" }

    /// `url` with its host and port replaced by this camera's, path and query kept: the
    /// addresses a camera reports for its services are reached where it was reached (a camera
    /// behind NAT reports its inside address; a forged one cannot send the token elsewhere).
    public func sameHost(_ url: String) -> String? {
        guard let scheme = url.utf8Range(of: "://") else { return nil }
        let name = url[..<scheme.lowerBound]
        guard name.equalsIgnoringCase("http") || name.equalsIgnoringCase("https") else { return nil }
        let rest = url[scheme.upperBound...]
        let pathStart = rest.utf8.firstIndex(of: 0x2F) ?? rest.endIndex
        let path = rest[pathStart...]
        guard !path.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else { return nil }
        return "http://\(authority)\(path.isEmpty ? "/" : path)"
    }
}

extension RTSPURL {
    /// This URL with `user` and `password` in it (percent-encoded), replacing any it had: a
    /// camera's stream URI is given without the credentials it then asks for.
    public func with(user: String, password: String) -> String {
        "\(scheme.rawValue)://\(Self.percentEncoded(user)):\(Self.percentEncoded(password))@\(authority)\(pathAndQuery)"
    }

    /// Everything but RFC 3986's unreserved characters escaped, for a URL's user information.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for b in text.utf8 {
            switch b {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(UnicodeScalar(b))
            default: out += "%" + Hex.encode([b], uppercase: true)
            }
        }
        return out
    }
}
