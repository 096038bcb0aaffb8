import MediaCore
import Glibc
import Foundation

/// Milliseconds until `deadline` (monotonic nanoseconds), at most `cap`; throws once it passed
/// or when the handle was interrupted.
@inline(__always)
func pollSlice(until deadline: UInt64, interrupt: InterruptHandle, cap: Int32 = 100) throws(WireError) -> Int32 {
    if interrupt.isInterrupted { throw .stopped }
    let now = MonotonicClock.nanoseconds()
    if now >= deadline { throw .timedOut }
    return Int32(min(UInt64(cap), (deadline - now + 999_999) / 1_000_000))
}

/// A TCP connection with every wait bounded by a deadline and a stop flag: the RTSP control
/// channel, and the media with it when RTP is interleaved.
final class TCPLink: @unchecked Sendable {
    // Safety: confined to the ingest thread, but for `send`, which a talk path calls too: its
    // writes are whole under `sending`, so a request and an interleaved packet never mix.
    let fd: Int32
    private let sending = NSLock()
    /// What the server sent, not yet taken.
    let input = ByteQueue()
    /// The address the connection reached (the server's, for UDP source checks).
    let peer: sockaddr_storage

    init(host: String, port: UInt16, deadline: UInt64, interrupt: InterruptHandle) throws(WireError) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let g = getaddrinfo(host, String(port), &hints, &list)
        guard g == 0, let first = list else {
            throw .unreachable(g == 0 ? "no address for \(host)" : String(cString: gai_strerror(g)))
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        var lastError: WireError = .unreachable("no address")
        while let a = entry {
            entry = a.pointee.ai_next
            let s = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol)
            if s < 0 { lastError = .failed(String(cString: strerror(errno))); continue }
            do throws(WireError) {
                try Self.connect(s, a.pointee, deadline: deadline, interrupt: interrupt)
                var one: Int32 = 1
                setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                var storage = sockaddr_storage()
                memcpy(&storage, a.pointee.ai_addr, Int(a.pointee.ai_addrlen))
                fd = s
                peer = storage
                return
            } catch {
                close(s)
                switch error {
                case .timedOut, .stopped: throw error
                default: lastError = error
                }
            }
        }
        throw lastError
    }

    private static func connect(_ s: Int32, _ a: addrinfo, deadline: UInt64, interrupt: InterruptHandle) throws(WireError) {
        if Glibc.connect(s, a.ai_addr, a.ai_addrlen) == 0 { return }
        guard errno == EINPROGRESS else { throw .unreachable(String(cString: strerror(errno))) }
        var p = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
        while true {
            let ms = try pollSlice(until: deadline, interrupt: interrupt)
            if poll(&p, 1, ms) == 1 { break }
        }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 else { throw .failed(String(cString: strerror(errno))) }
        if err != 0 { throw .unreachable(String(cString: strerror(err))) }
    }

    deinit { close(fd) }

    /// Sends all of `bytes`, waiting for room at most until `deadline`.
    func send(_ bytes: [UInt8], deadline: UInt64, interrupt: InterruptHandle) throws(WireError) {
        sending.lock()
        defer { sending.unlock() }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, try pollSlice(until: deadline, interrupt: interrupt))
                continue
            }
            throw n == 0 ? .closed : .failed(String(cString: strerror(errno)))
        }
    }

    /// What `trySend` did.
    enum TrySend {
        case sent
        /// Nothing was written: another sender holds the connection, or the kernel's buffer is full.
        case busy
        /// Part was written and the rest would wait, or the connection failed: its stream of
        /// bytes is no longer whole, and it is shut down (the session's reader sees it end, and
        /// the source reconnects) rather than have a request read as the rest of the frame.
        case broken
    }

    /// Sends all of `bytes` now or nothing, never waiting (a talk path on an event loop): busy
    /// when a request is being sent or the socket has no room.
    func trySend(_ bytes: [UInt8]) -> TrySend {
        guard sending.try() else { return .busy }
        defer { sending.unlock() }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && sent == 0 { return .busy }
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            return .broken
        }
        return .sent
    }

    private var scratch = [UInt8](repeating: 0, count: 65536)
    /// The server closed its side (what it sent before is still in the buffer).
    private(set) var isClosed = false

    /// Reads what the socket has now into the buffer (no wait). False when the server closed
    /// and nothing more came.
    func receive() throws(WireError) -> Bool {
        var got = 0
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n > 0 {
                input.append(scratch[0..<n])
                got += n
                if n < scratch.count { return true }
                continue
            }
            if n == 0 { isClosed = true; return got > 0 }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return true }
            throw .failed(String(cString: strerror(errno)))
        }
    }

    /// Waits until the socket is readable and reads (at most until `deadline`).
    func fill(deadline: UInt64, interrupt: InterruptHandle) throws(WireError) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&p, 1, try pollSlice(until: deadline, interrupt: interrupt)) != 1 {}
        if try !receive() { throw .closed }
    }
}
