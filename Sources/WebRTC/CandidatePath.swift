#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A WebRTC client's path to one of a server's candidates, on a blocking socket with a receive
/// deadline: UDP (a datagram per message), or ICE-TCP's active side (RFC 6544: one connection to
/// the server's passive candidate, each STUN message, DTLS record, RTP or RTCP packet framed by
/// RFC 4571's 16-bit length), for networks that block UDP. Messages are sent from one thread and
/// received on one (maybe another).
final class CandidatePath: @unchecked Sendable {
    // Safety: `pending` is touched only by the receiving thread; `fd` and `overTCP` are immutable;
    // `broken` is atomic.

    let fd: Int32
    let overTCP: Bool
    /// TCP: the connection is of no more use (the server closed it, or a frame could not be sent
    /// whole within a second: its framing is lost, or the link is too slow to carry the stream).
    private let broken = Atomic<Bool>(false)
    /// TCP: bytes received that do not yet make a whole frame.
    private var pending: [UInt8] = []
    private var start = 0

    var transport: String { overTCP ? "tcp" : "udp" }

    private init(fd: Int32, overTCP: Bool) {
        self.fd = fd
        self.overTCP = overTCP
    }

    /// A UDP socket connected to `host:port`.
    static func udp(host: String, port: Int, receiveTimeoutMicros: Int) -> Result<CandidatePath, WebRTCError> {
        ConnectedUDP.open(host: host, port: port, receiveTimeoutMicros: receiveTimeoutMicros).map { CandidatePath(fd: $0, overTCP: false) }
    }

    /// A TCP connection to a passive ICE-TCP candidate, made within `connectTimeoutMicros`; a
    /// frame that cannot be sent within a second breaks the path (its framing would be lost).
    static func tcp(host: String, port: Int, receiveTimeoutMicros: Int, connectTimeoutMicros: Int = 3_000_000) -> Result<CandidatePath, WebRTCError> {
        guard let to = CandidateAddress(host: host, port: port) else { return .failure(WebRTCError("candidate address \(host) port \(port)")) }
        let fd = socket(to.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(WebRTCError("socket: \(errno)")) }
        let r = to.connect(fd)
        if r != 0 {
            guard errno == EINPROGRESS else {
                let e = errno
                Glibc.close(fd)
                return .failure(WebRTCError("connect to tcp \(to.description): \(String(cString: strerror(e)))"))
            }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&p, 1, Int32(connectTimeoutMicros / 1000))
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard ready == 1, error == 0 else {
                Glibc.close(fd)
                return .failure(WebRTCError(ready == 1 ? "connect to tcp \(to.description): \(String(cString: strerror(error)))"
                                                       : "connect to tcp \(to.description): no answer within \(connectTimeoutMicros / 1_000_000) s"))
            }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~Int32(O_NONBLOCK))
        var timeout = timeval(tv_sec: receiveTimeoutMicros / 1_000_000, tv_usec: receiveTimeoutMicros % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sendTimeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return .success(CandidatePath(fd: fd, overTCP: true))
    }

    /// Why the path is of no more use, if it is not.
    var failure: String? { broken.load(ordering: .relaxed) ? "the ICE-TCP connection closed or stalled" : nil }

    /// Sends one message; the bytes of it sent (0 when it could not be, or is too long to frame).
    @discardableResult
    func send(_ message: [UInt8]) -> Int {
        guard overTCP else {
            let n = message.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return max(0, n)
        }
        guard !broken.load(ordering: .relaxed), message.count <= Int(UInt16.max) else { return 0 }
        var frame = [UInt8(message.count >> 8), UInt8(message.count & 0xFF)]
        frame.reserveCapacity(2 + message.count)
        frame += message
        var sent = 0
        while sent < frame.count {
            let n = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                // A second without room (or a frame cut short): the path is given up, and the
                // session ends at its next consent check rather than wait on every packet.
                broken.store(true, ordering: .relaxed)
                shutdown(fd, Int32(SHUT_RDWR))
                return 0
            }
            sent += n
        }
        return message.count
    }

    /// The next message, waiting at most the receive deadline; nil when none came.
    func receive(_ buffer: inout [UInt8]) -> [UInt8]? {
        guard overTCP else {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? Array(buffer[0..<n]) : nil
        }
        if let frame = nextFrame() { return frame }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else {
            // Closed by the server: said by `failure`; wait out the deadline as a silent socket would.
            if n == 0 {
                broken.store(true, ordering: .relaxed)
                usleep(50_000)
            }
            return nil
        }
        pending += buffer[0..<n]
        return nextFrame()
    }

    /// A whole frame from what was received, if there is one (an empty frame is skipped).
    private func nextFrame() -> [UInt8]? {
        while pending.count - start >= 2 {
            let length = Int(pending[start]) << 8 | Int(pending[start + 1])
            guard pending.count - start >= 2 + length else { break }
            let frame = Array(pending[(start + 2)..<(start + 2 + length)])
            start += 2 + length
            if start == pending.count {
                pending.removeAll(keepingCapacity: true)
                start = 0
            }
            if !frame.isEmpty { return frame }
        }
        if start > 65_536 {
            pending.removeFirst(start)
            start = 0
        }
        return nil
    }

    func close() { Glibc.close(fd) }
}
