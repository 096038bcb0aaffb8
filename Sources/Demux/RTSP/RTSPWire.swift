internal import CFFmpeg
import Wire
import MediaCore
import Foundation
import Glibc

/// Why a socket call of LiveRelay's own RTSP client ended. Mapped to `IngestError` by the source.
enum WireError: Error {
    /// Refused, no route, name not found.
    case unreachable(String)
    case timedOut
    case stopped
    /// The server closed the connection.
    case closed
    /// The server answered with an error status (`404 Not Found`).
    case status(Int, String)
    /// The server's bytes made no sense.
    case invalid(String)
    case failed(String)
    /// Something LiveRelay's own client does not take (FFmpeg's RTSP demuxer is used instead).
    case unsupported(String)
}

/// An `rtsp://` URL taken apart: where to connect, what to ask for, and the credentials (kept
/// out of every request line and message).
struct RTSPAddress {
    let host: String
    let port: UInt16
    /// The URL as sent in requests: no credentials.
    let requestURL: String
    let user: String?
    let password: String?

    init?(_ url: String) {
        guard let r = url.utf8Range(of: "://"), url[..<r.lowerBound].lowercased() == "rtsp" else { return nil }
        let rest = Substring(url[r.upperBound...])
        let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<pathStart]
        let path = rest[pathStart...]
        if let at = authority.lastIndex(of: "@") {
            let info = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let parts = info.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            user = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            password = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : nil
        } else {
            user = nil
            password = nil
        }
        guard let a = Reachability.authority(of: "rtsp://" + authority), !a.host.isEmpty else { return nil }
        host = a.host
        port = a.port ?? 554
        requestURL = "rtsp://" + authority + (path.isEmpty ? "/" : path)
    }
}

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
/// Bytes received and not yet taken.
final class ByteQueue {
    private var buffer: [UInt8] = []
    private var start = 0

    func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    var available: Int { buffer.count - start }

    func consume(_ n: Int) { start += n }

    /// The byte `i` places after the read position.
    @inline(__always) func byte(_ i: Int) -> UInt8 { buffer[start + i] }

    func bytes(_ range: Range<Int>) -> ArraySlice<UInt8> { buffer[(start + range.lowerBound)..<(start + range.upperBound)] }
}

final class TCPLink {
    let fd: Int32
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

/// What comes next on an RTSP connection: a response, or interleaved media (`$`, channel,
/// length, payload).
enum RTSPChunk {
    case response(RTSPResponse)
    case interleaved(channel: UInt8, payload: ArraySlice<UInt8>)
}

enum RTSPParse {
    /// Longest response head accepted from a server.
    static let maxHead = 65536

    /// The next whole chunk at the link's read position, consumed; nil if more bytes are needed.
    /// Bytes that are neither are skipped up to the next `$` or `RTSP/` (a server's stray data).
    static func next(_ link: ByteQueue) throws(WireError) -> RTSPChunk? {
        while link.available > 0 {
            if link.byte(0) == 0x24 { // '$'
                guard link.available >= 4 else { return nil }
                let length = Int(link.byte(2)) << 8 | Int(link.byte(3))
                guard link.available >= 4 + length else { return nil }
                let payload = link.bytes(4..<(4 + length))
                let channel = link.byte(1)
                link.consume(4 + length)
                return .interleaved(channel: channel, payload: payload)
            }
            if link.available < 5 { return nil }
            if link.bytes(0..<5).elementsEqual("RTSP/".utf8) {
                return try response(link)
            }
            link.consume(1) // resynchronise
        }
        return nil
    }

    private static func response(_ link: ByteQueue) throws(WireError) -> RTSPChunk? {
        let n = link.available
        var end = -1
        var i = 3
        while i < n {
            if link.byte(i) == 10 && link.byte(i - 1) == 13 && link.byte(i - 2) == 10 && link.byte(i - 3) == 13 { end = i + 1; break }
            i += 1
        }
        if end < 0 {
            if n > maxHead { throw .invalid("a response head longer than \(maxHead) bytes") }
            return nil
        }
        let response: RTSPResponse
        let length: Int
        do throws(RTSPMessageError) {
            response = try RTSPMessageHead.response(link.bytes(0..<(end - 4)))
            length = try RTSPMessageHead.contentLength(response.headers, max: 1 << 20)
        } catch {
            throw .invalid(error.description)
        }
        guard n >= end + length else { return nil }
        var complete = response
        complete.body = Array(link.bytes(end..<(end + length)))
        link.consume(end + length)
        return .response(complete)
    }
}

/// Credentials for a server that asks (401): Digest (RFC 2617, MD5) when offered, else Basic.
struct RTSPAuth {
    let user: String
    let password: String
    private enum Scheme { case basic, digest(realm: String, nonce: String, opaque: String?, qop: Bool) }
    private var scheme: Scheme?
    private var count = 0

    init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    var isReady: Bool { scheme != nil }

    /// Takes the challenges of a 401. False if none can be answered.
    mutating func challenge(_ values: [String]) -> Bool {
        if let d = values.first(where: { $0.lowercased().hasPrefix("digest") }) {
            let p = Self.parameters(String(d.dropFirst(6)))
            guard let realm = p["realm"], let nonce = p["nonce"] else { return false }
            if let a = p["algorithm"], a.uppercased() != "MD5" { return false }
            let qop = p["qop"].map { $0.split(separator: ",").contains { $0.trimmingASCIISpaces() == "auth" } } ?? false
            scheme = .digest(realm: realm, nonce: nonce, opaque: p["opaque"], qop: qop)
            return true
        }
        if values.contains(where: { $0.lowercased().hasPrefix("basic") }) {
            scheme = .basic
            return true
        }
        return false
    }

    /// The Authorization header's value for a request, once a challenge came.
    mutating func header(method: String, uri: String) -> String? {
        switch scheme {
        case nil: return nil
        case .basic: return "Basic " + Base64.encode("\(user):\(password)".utf8)
        case .digest(let realm, let nonce, let opaque, let qop):
            let ha1 = Self.md5("\(user):\(realm):\(password)"), ha2 = Self.md5("\(method):\(uri)")
            var v = "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\""
            if qop {
                count += 1
                let nc = String(format: "%08x", count), cnonce = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
                v += ", qop=auth, nc=\(nc), cnonce=\"\(cnonce)\", response=\"\(Self.md5("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)"))\""
            } else {
                v += ", response=\"\(Self.md5("\(ha1):\(nonce):\(ha2)"))\""
            }
            if let opaque { v += ", opaque=\"\(opaque)\"" }
            return v + ", algorithm=MD5"
        }
    }

    static func md5(_ s: String) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        let bytes = Array(s.utf8)
        bytes.withUnsafeBufferPointer { b in av_md5_sum(&digest, b.baseAddress, b.count) }
        return Hex.encode(digest)
    }

    /// `key=value, key="quoted, value"` pairs; keys lowercased.
    static func parameters(_ s: String) -> [String: String] {
        var out: [String: String] = [:]
        var i = s.startIndex
        while i < s.endIndex {
            while i < s.endIndex, s[i] == " " || s[i] == "," { i = s.index(after: i) }
            guard let eq = s[i...].firstIndex(of: "=") else { break }
            let key = s[i..<eq].trimmingASCIISpaces().lowercased()
            var j = s.index(after: eq)
            var value = ""
            if j < s.endIndex, s[j] == "\"" {
                j = s.index(after: j)
                let close = s[j...].firstIndex(of: "\"") ?? s.endIndex
                value = String(s[j..<close])
                i = close < s.endIndex ? s.index(after: close) : close
            } else {
                let close = s[j...].firstIndex(of: ",") ?? s.endIndex
                value = String(s[j..<close].trimmingASCIISpaces())
                i = close
            }
            out[key] = value
        }
        return out
    }
}
