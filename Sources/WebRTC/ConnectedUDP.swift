#if canImport(Glibc)
import Glibc
#endif

/// A candidate's address as the socket calls take it: IPv4 or IPv6 (a candidate's address is
/// an IP literal, RFC 8839), or nil when `host` is neither.
struct CandidateAddress {
    let family: Int32
    private let storage: sockaddr_storage
    let length: socklen_t

    /// `host:port` as errors say it (an IPv6 address in brackets).
    let description: String

    init?(host: String, port: Int) {
        guard (1...65535).contains(port) else { return nil }
        let bigEndianPort = in_port_t(UInt16(port).bigEndian)
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = bigEndianPort
            (storage, length) = Self.stored(v4)
            (family, description) = (AF_INET, "\(host):\(port)")
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = bigEndianPort
            (storage, length) = Self.stored(v6)
            (family, description) = (AF_INET6, "[\(host)]:\(port)")
        } else {
            return nil
        }
    }

    /// A `sockaddr_in` or `sockaddr_in6` in a `sockaddr_storage`, and its length.
    private static func stored<Address>(_ address: Address) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { s in withUnsafeBytes(of: address) { s.copyMemory(from: $0) } }
        return (storage, socklen_t(MemoryLayout<Address>.size))
    }

    /// `connect(2)` of `fd` to this address: 0, or -1 with errno set.
    func connect(_ fd: Int32) -> Int32 {
        var address = storage
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
    }
}

/// A UDP socket connected to one address and port (IPv4 or IPv6), with a receive deadline: a
/// WebRTC client's path to a server's candidate (the bench's load viewers, WHIP pushes).
enum ConnectedUDP {
    /// The socket, or why not.
    static func open(host: String, port: Int, receiveTimeoutMicros: Int, receiveBuffer: Int32? = nil) -> Result<Int32, WebRTCError> {
        guard let to = CandidateAddress(host: host, port: port) else { return .failure(WebRTCError("candidate address \(host) port \(port)")) }
        let fd = socket(to.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(WebRTCError("socket: \(String(cString: strerror(errno)))")) }
        guard to.connect(fd) == 0 else {
            let e = errno
            close(fd)
            return .failure(WebRTCError("connect to \(to.description): \(String(cString: strerror(e)))"))
        }
        var timeout = timeval(tv_sec: receiveTimeoutMicros / 1_000_000, tv_usec: receiveTimeoutMicros % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        return .success(fd)
    }
}
