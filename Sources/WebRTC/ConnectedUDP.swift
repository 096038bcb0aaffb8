#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket connected to one IPv4 address and port, with a receive deadline: a WebRTC
/// client's path to a server's candidate (the bench's load viewers, WHIP pushes).
enum ConnectedUDP {
    /// The socket, or why not.
    static func open(host: String, port: Int, receiveTimeoutMicros: Int, receiveBuffer: Int32? = nil) -> Result<Int32, WebRTCError> {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return .failure(WebRTCError("socket: \(errno)")) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, host, &to.sin_addr) == 1 else {
            close(fd)
            return .failure(WebRTCError("candidate address \(host)"))
        }
        let connected = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            let e = errno
            close(fd)
            return .failure(WebRTCError("connect to \(host):\(port): \(e)"))
        }
        var timeout = timeval(tv_sec: receiveTimeoutMicros / 1_000_000, tv_usec: receiveTimeoutMicros % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        return .success(fd)
    }
}
