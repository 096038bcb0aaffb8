import MediaCore
import Glibc

/// The two UDP sockets of one track (RTP on an even port, RTCP on the next).
struct UDPPair {
    let rtp: Int32
    let rtcp: Int32
    let port: UInt16
    var serverRTCP: UInt16?
    private static let ssrc = UInt32.random(in: 1...UInt32.max)

    init(family: sa_family_t) throws(WireError) {
        for _ in 0..<32 {
            let a = Self.bound(family: family, port: 0)
            guard a.fd >= 0 else { break }
            if a.port % 2 == 0 {
                let b = Self.bound(family: family, port: a.port + 1)
                if b.fd >= 0 { rtp = a.fd; rtcp = b.fd; port = a.port; return }
            }
            close(a.fd)
        }
        throw .failed("no pair of UDP ports for RTP and RTCP")
    }

    private static func bound(family: sa_family_t, port: UInt16) -> (fd: Int32, port: UInt16) {
        let fd = socket(Int32(family), Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return (-1, 0) }
        var size: Int32 = 2 << 20 // a 4K keyframe arrives as one burst
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        var len: socklen_t
        if Int32(family) == AF_INET6 {
            withUnsafeMutableBytes(of: &storage) { raw in
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                a.pointee.sin6_family = sa_family_t(AF_INET6)
                a.pointee.sin6_port = port.bigEndian
            }
            len = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            withUnsafeMutableBytes(of: &storage) { raw in
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                a.pointee.sin_family = sa_family_t(AF_INET)
                a.pointee.sin_port = port.bigEndian
            }
            len = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let ok = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard ok == 0 else { close(fd); return (-1, 0) }
        var got = sockaddr_storage()
        var gotLen = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &got) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &gotLen) } }
        let p = withUnsafeBytes(of: &got) { raw -> UInt16 in
            Int32(family) == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port) : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
        return (fd, p)
    }

    /// The numeric host of an address.
    static func host(_ a: sockaddr_storage) -> String {
        var a = a
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let len = socklen_t(Int32(a.ss_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getnameinfo($0, len, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) } }
        return r == 0 ? String(cString: text) : ""
    }

    /// Whether two addresses name the same host (ports aside).
    static func sameHost(_ a: sockaddr_storage, _ b: sockaddr_storage) -> Bool {
        guard a.ss_family == b.ss_family else { return false }
        let v6 = Int32(a.ss_family) == AF_INET6
        var a = a, b = b
        return withUnsafeBytes(of: &a) { x in
            withUnsafeBytes(of: &b) { y in
                if v6 {
                    return x.load(as: sockaddr_in6.self).sin6_addr.__in6_u.__u6_addr32 == y.load(as: sockaddr_in6.self).sin6_addr.__in6_u.__u6_addr32
                }
                return x.load(as: sockaddr_in.self).sin_addr.s_addr == y.load(as: sockaddr_in.self).sin_addr.s_addr
            }
        }
    }

    /// An empty receiver report with our CNAME, to the server's RTCP port.
    func report(to peer: sockaddr_storage) {
        guard let port = serverRTCP else { return }
        var p: [UInt8] = [0x80, 201, 0, 1]
        p += withUnsafeBytes(of: Self.ssrc.bigEndian, Array.init)
        let cname = Array("liverelay".utf8)
        var sdes: [UInt8] = [0x81, 202, 0, 0] + withUnsafeBytes(of: Self.ssrc.bigEndian, Array.init) + [1, UInt8(cname.count)] + cname + [0]
        while sdes.count % 4 != 0 { sdes.append(0) }
        sdes[3] = UInt8(sdes.count / 4 - 1)
        p += sdes
        var to = peer
        let len: socklen_t
        if Int32(to.ss_family) == AF_INET6 {
            withUnsafeMutableBytes(of: &to) { $0.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = port.bigEndian }
            len = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            withUnsafeMutableBytes(of: &to) { $0.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = port.bigEndian }
            len = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        _ = p.withUnsafeBytes { b in withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(rtcp, b.baseAddress, b.count, 0, $0, len) } } }
    }
}
