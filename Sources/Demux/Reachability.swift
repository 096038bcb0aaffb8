import Foundation
import Wire
import Glibc

/// A cheap check that a network source is back: a TCP connect to its host and port, bounded
/// to a fraction of a second. A supervisor runs it every `interval` while it waits between the
/// expensive full opens, and reopens as soon as a source that was unreachable answers again.
public struct Reachability: Sendable {
    public let host: String
    public let port: UInt16
    /// How often the check runs while waiting.
    public static let interval = 0.2
    /// How long one connect may take.
    public static let connectTimeout = 0.2

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// The probe for a URL whose source listens on TCP (RTSP, RTMP, HTTP); nil for the rest
    /// (UDP, SRT, files, listen mode: nothing to knock on).
    public init?(url: String, listen: Bool) {
        guard !listen, let r = url.utf8Range(of: "://") else { return nil }
        let scheme = url[..<r.lowerBound].lowercased()
        let defaults: [String: UInt16] = ["rtsp": 554, "rtsps": 322, "rtmp": 1935, "rtmps": 443, "http": 80, "https": 443, "tcp": 0]
        guard let defaultPort = defaults[scheme], let a = Self.authority(of: url) else { return nil }
        let port = a.port ?? defaultPort
        guard !a.host.isEmpty, port != 0 else { return nil }
        self.init(host: a.host, port: port)
    }

    /// The host (brackets removed from IPv6) and port, if given, of a URL: userinfo, path,
    /// query and fragment left out. Nil without `://` or with a port that is not a number.
    public static func authority(of url: String) -> (host: String, port: UInt16?)? {
        guard let r = url.utf8Range(of: "://") else { return nil }
        var rest = url[r.upperBound...]
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            let after = rest[rest.index(after: close)...]
            let port = after.hasPrefix(":") ? UInt16(after.dropFirst()) : nil
            if after.hasPrefix(":") && port == nil { return nil }
            return (String(rest[rest.index(after: rest.startIndex)..<close]), port)
        }
        if let colon = rest.lastIndex(of: ":") {
            guard let port = UInt16(rest[rest.index(after: colon)...]) else { return nil }
            return (String(rest[..<colon]), port)
        }
        return (String(rest), nil)
    }

    /// True when a TCP connection to the source completes within `connectTimeout`.
    public func isReachable() -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let a = entry {
            if connect(a.pointee) { return true }
            entry = a.pointee.ai_next
        }
        return false
    }

    private func connect(_ a: addrinfo) -> Bool {
        let fd = socket(a.ai_family, a.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), a.ai_protocol)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if Glibc.connect(fd, a.ai_addr, a.ai_addrlen) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, Int32(Self.connectTimeout * 1000)) == 1 else { return false }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 else { return false }
        return err == 0
    }
}
