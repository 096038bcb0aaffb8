import CSRT
public import MediaCore
import Foundation
import Synchronization

/// One SRT port for many callers (`ingest.srt`): FFmpeg's `srt://…?mode=listener` takes one
/// caller per open, so LiveRelay listens with libsrt itself. Each caller's handshake is judged
/// before it completes (its `streamid` and address, in libsrt's listen callback): refused with
/// an SRT reject code the caller prints, or accepted with the passphrase its stream requires,
/// so a wrong passphrase fails the handshake and no media is ever taken. An accepted caller
/// gets a thread of its own that reads its messages (MPEG-TS, 1316 bytes each) with deadlines.
public final class SRTListener: @unchecked Sendable {
    // Safety: the socket handle is set once in init; `stopFlag` and `listenerClosed` are atomic;
    // `decide` and `accepted` are Sendable closures.

    /// What to do with a caller whose handshake is arriving.
    public enum Decision: Sendable {
        /// Take it; with a passphrase, the caller must have the same one (else the handshake fails).
        case accept(passphrase: String?)
        case reject(Rejection)
    }

    /// Reasons a caller is refused, as SRT's access-control codes (the caller sees the code).
    public enum Rejection: Int32, Sendable {
        case badRequest = 1400
        case unauthorized = 1401
        case forbidden = 1403
        case notFound = 1404
        case badMode = 1405
        case conflict = 1409
    }

    public typealias Decide = @Sendable (_ streamID: String, _ peer: String) -> Decision
    public typealias Accepted = @Sendable (_ caller: SRTConnection) -> Void

    private let listener: SRTSOCKET
    private let listenerClosed = Atomic<Bool>(false)
    private let decide: Decide
    private let accepted: Accepted
    private let stopFlag = Atomic<Bool>(false)
    private let accepting = Atomic<Bool>(false)
    /// The bound port (the configured one, or the one the system chose for port 0).
    public let port: Int

    /// Binds `host:port` (UDP) and listens. Callers are judged by `decide` on libsrt's own
    /// thread (keep it quick: no I/O); each accepted one is handed to `accepted` on a new thread.
    /// - Parameter latency: the receiver latency this side asks for (SRT takes the larger of
    ///   both sides' values, so a caller can still ask for more).
    public init(host: String, port: Int, latency: Duration, decide: @escaping Decide, accepted: @escaping Accepted) throws(IngestError) {
        let url = "srt://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        srt_startup()
        // libsrt logs to stderr on its own threads (warnings such as "nothing to read" on each
        // receive deadline): only its errors, which LiveRelay cannot otherwise see, are kept.
        srt_setloglevel(3 /* LOG_ERR */)
        func fail(_ stage: String) -> IngestError {
            IngestError(.failed, source: url, stage: stage, detail: String(cString: srt_getlasterror_str()))
        }
        let s = srt_create_socket()
        guard s != SRT_INVALID_SOCK else { throw fail("creating the SRT socket") }
        var ms = Self.milliseconds(latency)
        _ = srt_setsockflag(s, SRTO_LATENCY, &ms, Int32(MemoryLayout<Int32>.size))
        // What this side asks of a reader's buffer: nothing. A reader's own `latency=` decides
        // (SRT takes the larger of the two), so one on a clean link need not wait 20 ms.
        var none: Int32 = 0
        _ = srt_setsockflag(s, SRTO_PEERLATENCY, &none, Int32(MemoryLayout<Int32>.size))
        guard let bound = Self.bind(s, host: host, port: port) else {
            var probe = in6_addr()
            let isAddress = inet_pton(AF_INET, host, &probe) == 1 || inet_pton(AF_INET6, host, &probe) == 1
            let e = IngestError(.failed, source: url, stage: "binding", detail: isAddress ? String(cString: srt_getlasterror_str()) : "\(host) is not an IP address")
            srt_close(s)
            throw e
        }
        guard srt_listen(s, 64) == 0 else { let e = fail("listening"); srt_close(s); throw e }
        self.port = bound
        listener = s
        self.decide = decide
        self.accepted = accepted
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        _ = srt_listen_callback(s, { opaque, ns, _, peer, streamID in
            guard let opaque else { return -1 }
            let me = Unmanaged<SRTListener>.fromOpaque(opaque).takeUnretainedValue()
            return me.judge(ns, peer: SRTListener.describe(peer), streamID: streamID.map { String(cString: $0) } ?? "")
        }, opaque)
    }

    deinit {
        closeListener()
        srt_cleanup()
    }

    /// Starts accepting, on a thread of its own that waits in `srt_accept` until `stop`.
    public func start() {
        guard accepting.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let thread = Thread { [self] in
            acceptLoop()
            accepting.store(false, ordering: .releasing)
        }
        thread.name = "srt-accept"
        thread.start()
    }

    /// Stops accepting and closes the port (connected callers end on their own deadlines).
    public func stop() {
        stopFlag.store(true, ordering: .releasing)
        closeListener()
        while accepting.load(ordering: .acquiring) { usleep(10_000) }
    }

    /// Closing the listener wakes a thread waiting in `srt_accept`.
    private func closeListener() {
        guard !listenerClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        srt_close(listener)
    }

    public var isStopped: Bool { stopFlag.load(ordering: .acquiring) }

    private func judge(_ ns: SRTSOCKET, peer: String, streamID: String) -> Int32 {
        switch decide(streamID, peer) {
        case .accept(let passphrase):
            if let passphrase, !passphrase.isEmpty {
                var bytes = Array(passphrase.utf8)
                let r = srt_setsockflag(ns, SRTO_PASSPHRASE, &bytes, Int32(bytes.count))
                if r != 0 { _ = srt_setrejectreason(ns, Rejection.forbidden.rawValue); return -1 }
            }
            return 0
        case .reject(let why):
            _ = srt_setrejectreason(ns, why.rawValue)
            return -1
        }
    }

    /// Waits in a blocking `srt_accept`, on the listener's own condition. (`srt_epoll_uwait` wakes
    /// on libsrt's global event, which every packet of every connection signals: with 100 SRT
    /// readers, 3,000 wakeups a second, each paid by libsrt's sender or receiver thread.)
    private func acceptLoop() {
        while !isStopped {
            var peer = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            let s = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in SRTLog.quietly { srt_accept(listener, p, &length) } }
            }
            guard s != SRT_INVALID_SOCK else {
                // Closed by `stop`, the way out. Otherwise a queued caller that went away (retried),
                // or a listener libsrt closed (said, and the thread ends).
                guard !isStopped else { return }
                let why = String(cString: srt_getlasterror_str())
                if srt_getsockstate(listener) != SRTS_LISTENING {
                    SRTLog.error("the SRT port \(port) stopped listening (\(why)); no more callers are taken")
                    return
                }
                usleep(50_000)
                continue
            }
            guard !isStopped else { srt_close(s); return }
            let connection = SRTConnection(socket: s, peer: withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SRTListener.describe($0) }
            })
            let accepted = self.accepted
            let thread = Thread { accepted(connection) }
            thread.name = "srt-caller"
            thread.start()
        }
    }

    private static func text(_ c: [CChar]) -> String {
        String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `address:port` of a socket address (v4 or v6).
    static func describe(_ address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                var sin = a.pointee.sin_addr
                inet_ntop(AF_INET, &sin, &text, socklen_t(text.count))
                return "\(Self.text(text)):\(UInt16(bigEndian: a.pointee.sin_port))"
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                var sin6 = a.pointee.sin6_addr
                inet_ntop(AF_INET6, &sin6, &text, socklen_t(text.count))
                return "[\(Self.text(text))]:\(UInt16(bigEndian: a.pointee.sin6_port))"
            }
        default:
            return "unknown"
        }
    }
}

/// An accepted SRT caller: its stream ID and address, and its messages read (a publisher, with a
/// deadline) or sent (a reader, never waiting).
public final class SRTConnection: @unchecked Sendable {
    // Safety: read by the one thread it was handed to, or sent to by one at a time (a stream's
    // readers' sender); `close` may come from another, and libsrt's close is thread-safe (a
    // blocked receive returns).
    private let socket: SRTSOCKET
    private let closed = Atomic<Bool>(false)
    /// SRTO_RCVTIMEO as last set, in ms (0: not yet).
    private var receiveTimeout: Int32 = 0
    /// SRTO_SNDSYN turned off (sends never wait).
    private var sendsWithoutWaiting = false
    public let peer: String
    /// The caller's `streamid` (SRTO_STREAMID), as it sent it.
    public let streamID: String

    init(socket: SRTSOCKET, peer: String) {
        self.socket = socket
        self.peer = peer
        var buffer = [CChar](repeating: 0, count: 768)
        var length = Int32(buffer.count - 1)
        if srt_getsockflag(socket, SRTO_STREAMID, &buffer, &length) == 0 {
            streamID = String(decoding: buffer.prefix(Int(max(0, length))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            streamID = ""
        }
    }

    deinit { close() }

    /// libsrt's counters for this connection (since it opened): round trip, received, lost,
    /// retransmitted and dropped packets, receive rate. Nil once closed or when libsrt says no.
    public var linkHealth: LinkHealth.SRT? {
        guard !closed.load(ordering: .relaxed) else { return nil }
        var perf = SRT_TRACEBSTATS()
        guard srt_bstats(socket, &perf, 0) == 0 else { return nil }
        func count<T: BinaryInteger>(_ v: T) -> Int { Int(clamping: v) }
        return LinkHealth.SRT(roundTripMs: perf.msRTT.isFinite ? perf.msRTT : 0, packetsReceived: count(perf.pktRecvTotal),
                              packetsLost: count(perf.pktRcvLossTotal), packetsRetransmitted: count(perf.pktRcvRetrans),
                              packetsDropped: count(perf.pktRcvDropTotal), receiveMbps: perf.mbpsRecvRate.isFinite ? perf.mbpsRecvRate : 0)
    }

    public enum Received: Equatable, Sendable {
        /// A message of this many bytes is at the start of the buffer.
        case data(Int)
        /// Nothing within the deadline; the connection is still up.
        case timedOut
        /// The caller left or the connection broke (libsrt's words).
        case ended(String)
    }

    /// Waits up to `timeout` for the caller's next message, into `buffer` (1316 bytes fit a
    /// live-mode message; give 1500).
    public func receive(into buffer: inout [UInt8], timeout: Duration) -> Received {
        guard !closed.load(ordering: .acquiring) else { return .ended("closed") }
        // Set when it changes, not for every message.
        var ms = max(1, SRTListener.milliseconds(timeout))
        if ms != receiveTimeout {
            _ = srt_setsockflag(socket, SRTO_RCVTIMEO, &ms, Int32(MemoryLayout<Int32>.size))
            receiveTimeout = ms
        }
        let n = buffer.withUnsafeMutableBytes { b in
            srt_recvmsg(socket, b.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(b.count))
        }
        if n > 0 { return .data(Int(n)) }
        let code = srt_getlasterror(nil)
        if code == Int32(SRT_EASYNCRCV.rawValue) { return .timedOut }
        return .ended(n == 0 ? "the caller closed the connection" : String(cString: srt_getlasterror_str()))
    }

    public enum Sent: Equatable, Sendable {
        case sent
        /// libsrt's send buffer is full: the reader is not keeping up.
        case stalled
        case ended(String)
    }

    /// Sends one message (at most 1316 bytes: seven TS packets) to a reader, never waiting for
    /// room in libsrt's send buffer.
    public func send(_ bytes: [UInt8]) -> Sent {
        guard !closed.load(ordering: .acquiring) else { return .ended("closed") }
        if !sendsWithoutWaiting {
            var no = false
            _ = srt_setsockflag(socket, SRTO_SNDSYN, &no, Int32(MemoryLayout<Bool>.size))
            sendsWithoutWaiting = true
        }
        let n = bytes.withUnsafeBytes { b in
            srt_sendmsg2(socket, b.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(b.count), nil)
        }
        if n >= 0 { return .sent }
        let code = srt_getlasterror(nil)
        if code == Int32(SRT_EASYNCSND.rawValue) { return .stalled }
        return .ended(String(cString: srt_getlasterror_str()))
    }

    /// The connection is still up (a reader that left is seen here even while nothing is sent).
    public var isConnected: Bool {
        guard !closed.load(ordering: .acquiring) else { return false }
        return srt_getsockstate(socket) == SRTS_CONNECTED
    }

    /// Ends the connection (once).
    public func close() {
        guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        srt_close(socket)
    }
}

extension SRTListener {
    /// A duration in whole milliseconds, as libsrt's options take it.
    static func milliseconds(_ d: Duration) -> Int32 {
        Int32(clamping: d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }

    /// Binds `s` to an IPv4 or IPv6 address; the bound port, or nil.
    static func bind(_ s: SRTSOCKET, host: String, port: Int) -> Int? {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            let r = withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_bind(s, $0, Int32(MemoryLayout<sockaddr_in>.size)) } }
            guard r == 0 else { return nil }
            var length = Int32(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_getsockname(s, $0, &length) } }
            return Int(UInt16(bigEndian: v4.sin_port))
        }
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            let r = withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_bind(s, $0, Int32(MemoryLayout<sockaddr_in6>.size)) } }
            guard r == 0 else { return nil }
            var length = Int32(MemoryLayout<sockaddr_in6>.size)
            _ = withUnsafeMutablePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_getsockname(s, $0, &length) } }
            return Int(UInt16(bigEndian: v6.sin6_port))
        }
        return nil
    }
}
