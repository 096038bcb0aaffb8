import Testing
import Foundation
import TestSupport
@testable import WebRTC

/// A WHIP push's path to the answer's candidate, over real loopback sockets: UDP datagrams and
/// RFC 4571 frames over ICE-TCP both ways, to an IPv4 and an IPv6 candidate (a candidate's
/// address is an IP literal of either family).
@Suite(.ownThreads, .tags(.fast)) struct CandidatePathTests {
    @Test func addressesOfEitherFamilyAndNothingElse() {
        #expect(CandidateAddress(host: "127.0.0.1", port: 9)?.family == AF_INET)
        #expect(CandidateAddress(host: "::1", port: 9)?.family == AF_INET6)
        #expect(CandidateAddress(host: "2001:db8::7", port: 65535)?.length == socklen_t(MemoryLayout<sockaddr_in6>.size))
        for bad in ["", "localhost", "1.2.3", "[::1]", "::1%lo", "1.2.3.4.5", "\u{0}"] {
            #expect(CandidateAddress(host: bad, port: 9) == nil, "\(bad)")
        }
        #expect(CandidateAddress(host: "127.0.0.1", port: 65536) == nil)
        #expect(CandidateAddress(host: "127.0.0.1", port: 0) == nil)
        #expect(CandidateAddress(host: "::1", port: 9)?.description == "[::1]:9")
        #expect(CandidateAddress(host: "127.0.0.1", port: -1) == nil)
    }

    /// A socket of `family` bound to its loopback address on a free port, and that port.
    static func bound(_ family: Int32, _ type: Int32) throws -> (fd: Int32, port: Int) {
        let fd = socket(family, type, 0)
        try #require(fd >= 0)
        var kept = false
        defer { if !kept { close(fd) } }
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_addr = in6addr_loopback
            withUnsafeMutableBytes(of: &storage) { s in withUnsafeBytes(of: a) { s.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            withUnsafeMutableBytes(of: &storage) { s in withUnsafeBytes(of: a) { s.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let r = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        try #require(r == 0, "bind: \(errno)")
        if type == Int32(SOCK_STREAM.rawValue) { try #require(listen(fd, 4) == 0) }
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = withUnsafeBytes(of: storage) { Int($0[2]) << 8 | Int($0[3]) }
        kept = true
        return (fd, port)
    }

    /// The loopback addresses this machine has (IPv6 can be turned off in a container).
    static let loopbacks: [(String, Int32)] = [("127.0.0.1", AF_INET)]
        + ((try? bound(AF_INET6, Int32(SOCK_DGRAM.rawValue))).map { close($0.fd); return [("::1", AF_INET6)] } ?? [])

    @Test(arguments: loopbacks)
    func datagramsAndFramesBothWays(host: String, family: Int32) throws {
        // UDP: a datagram each way.
        let server = try Self.bound(family, Int32(SOCK_DGRAM.rawValue))
        defer { close(server.fd) }
        let udp = try CandidatePath.udp(host: host, port: server.port, receiveTimeoutMicros: 1_000_000).get()
        defer { udp.close() }
        #expect(udp.send(Array("ping".utf8)) == 4)
        var buffer = [UInt8](repeating: 0, count: 2048)
        var from = sockaddr_storage()
        var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &from) { f in
            f.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in buffer.withUnsafeMutableBytes { recvfrom(server.fd, $0.baseAddress, $0.count, 0, a, &fromLength) } }
        }
        #expect(n == 4 && Array(buffer[0..<4]) == Array("ping".utf8))
        let answered = withUnsafePointer(to: &from) { f in
            f.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in Array("pong".utf8).withUnsafeBytes { sendto(server.fd, $0.baseAddress, $0.count, 0, a, fromLength) } }
        }
        #expect(answered == 4)
        #expect(udp.receive(&buffer) == Array("pong".utf8))

        // ICE-TCP: a frame each way, the length before it (RFC 4571).
        let listener = try Self.bound(family, Int32(SOCK_STREAM.rawValue))
        defer { close(listener.fd) }
        let tcp = try CandidatePath.tcp(host: host, port: listener.port, receiveTimeoutMicros: 1_000_000).get()
        defer { tcp.close() }
        let conn = accept(listener.fd, nil, nil)
        try #require(conn >= 0)
        var second = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &second, socklen_t(MemoryLayout<timeval>.size))
        #expect(tcp.send(Array("hello".utf8)) == 5)
        var got = [UInt8](repeating: 0, count: 7)
        let m = got.withUnsafeMutableBytes { recv(conn, $0.baseAddress, $0.count, Int32(MSG_WAITALL)) }
        #expect(m == 7 && Array(got[0..<7]) == [0, 5] + Array("hello".utf8), "\(got.prefix(max(0, m)))")
        // Two frames in one write, an empty one between them (skipped).
        let reply: [UInt8] = [0, 2] + Array("hi".utf8) + [0, 0] + [0, 3] + Array("bye".utf8)
        #expect(reply.withUnsafeBytes { send(conn, $0.baseAddress, $0.count, 0) } == reply.count)
        #expect(tcp.receive(&buffer) == Array("hi".utf8))
        #expect(tcp.receive(&buffer) == Array("bye".utf8))
        #expect(tcp.failure == nil)
        // The server closes: the path says it is of no more use.
        close(conn)
        #expect(tcp.receive(&buffer) == nil)
        #expect(tcp.failure != nil)
    }
}
