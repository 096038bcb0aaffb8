/// An IPv4 or IPv6 address as its bytes (4 or 16), parsed from text a peer or a config file
/// gives: `192.0.2.7`, `2001:db8::1`, `[::1]`, `::ffff:192.0.2.7`. Nothing is looked up.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
        var t = Substring(text)
        if t.hasPrefix("["), t.hasSuffix("]") { t = t.dropFirst().dropLast() }
        // A zone (`fe80::1%eth0`) names an interface, not part of the address.
        if let zone = t.firstIndex(of: "%") { t = t[..<zone] }
        guard !t.isEmpty, t.utf8.count <= 45 else { return nil }
        if let v4 = Self.v4(t) { bytes = v4; return }
        guard let v6 = Self.v6(t) else { return nil }
        bytes = v6
    }

    /// An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
    public var unmapped: IPAddress {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return self }
        return IPAddress(bytes: Array(bytes[12..<16]))
    }

    /// 127.0.0.0/8 or ::1 (an IPv4-mapped loopback address too).
    public var isLoopback: Bool {
        let a = unmapped.bytes
        if a.count == 4 { return a[0] == 127 }
        return a.count == 16 && a[0..<15].allSatisfy { $0 == 0 } && a[15] == 1
    }

    fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

    public var description: String {
        if bytes.count == 4 { return bytes.map { String($0) }.joined(separator: ".") }
        // RFC 5952: the longest run of two or more zero groups becomes `::`, as NIO writes
        // a peer's address (one client, one name in the limiter).
        var groups: [UInt16] = []
        var i = 0
        while i + 1 < bytes.count {
            groups.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
            i += 2
        }
        var best = (start: -1, length: 0), run = (start: -1, length: 0)
        for (k, g) in groups.enumerated() {
            if g == 0 {
                run = run.start < 0 ? (k, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let text = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return text.joined(separator: ":") }
        return text[..<best.start].joined(separator: ":") + "::" + text[(best.start + best.length)...].joined(separator: ":")
    }

    static func isHexDigit(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x46).contains(c) || (0x61...0x66).contains(c)
    }

    static func v4(_ t: Substring) -> [UInt8]? {
        let parts = t.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard (1...3).contains(p.utf8.count), p.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = UInt8(p) else { return nil }
            out.append(n)
        }
        return out
    }

    static func v6(_ t: Substring) -> [UInt8]? {
        // At most one `::`, standing for as many zero groups as the others leave.
        let u = Array(t.utf8)
        var gap: Int?
        var i = 0
        while i + 1 < u.count {
            if u[i] == 0x3A && u[i + 1] == 0x3A {
                guard gap == nil else { return nil }
                gap = i
                i += 2
            } else {
                i += 1
            }
        }
        func groups(_ bytes: ArraySlice<UInt8>, last: Bool) -> [UInt8]? {
            if bytes.isEmpty { return [] }
            let pieces = bytes.split(separator: 0x3A, omittingEmptySubsequences: false)
            var out: [UInt8] = []
            for (k, p) in pieces.enumerated() {
                let text = String(decoding: p, as: UTF8.self)
                if last, k == pieces.count - 1, p.contains(0x2E) {
                    guard let v4 = v4(Substring(text)) else { return nil }
                    out += v4
                } else {
                    guard (1...4).contains(p.count), p.allSatisfy(Self.isHexDigit), let n = UInt16(text, radix: 16) else { return nil }
                    out += [UInt8(n >> 8), UInt8(n & 0xFF)]
                }
            }
            return out
        }
        guard let g = gap else {
            guard let all = groups(u[...], last: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(u[..<g], last: false), let tail = groups(u[(g + 2)...], last: true),
              head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// A network in CIDR form (`10.0.0.0/8`, `2001:db8::/32`), or one address (`127.0.0.1`).
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public let address: IPAddress
    public let prefix: Int

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let a = IPAddress(first) else { return nil }
        let address = a.unmapped
        let bits = address.bytes.count * 8
        if parts.count == 2 {
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let p = Int(parts[1]), (0...bits).contains(p) else { return nil }
            prefix = p
        } else {
            prefix = bits
        }
        self.address = address
    }

    public func contains(_ other: IPAddress) -> Bool {
        let o = other.unmapped
        guard o.bytes.count == address.bytes.count else { return false }
        var left = prefix
        for (a, b) in zip(address.bytes, o.bytes) {
            if left <= 0 { return true }
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }

    public var description: String { "\(address)/\(prefix)" }

    /// The network of `prefix` bits that holds `address` (`2001:db8:1:2::/64` for
    /// `2001:db8:1:2:a:b:c:d` and 64); the prefix is kept within the address's bits.
    public init(containing address: IPAddress, prefix: Int) {
        let a = address.unmapped
        let bits = min(max(0, prefix), a.bytes.count * 8)
        var masked = a.bytes
        var left = bits
        for i in masked.indices {
            let mask: UInt8 = left >= 8 ? 0xFF : (left <= 0 ? 0 : ~(0xFF >> UInt8(left)))
            masked[i] &= mask
            left -= 8
        }
        self.address = IPAddress(bytes: masked)
        self.prefix = bits
    }
}

/// `X-Forwarded-For: client, proxy1, proxy2`: the addresses a request passed, nearest last.
/// Pieces that are not addresses (`unknown`, obfuscated names) are kept as nil, so a caller
/// walking from the right stops at them rather than skipping to a forged one.
public enum ForwardedFor {
    public static func hops(_ header: some StringProtocol) -> [IPAddress?] {
        // The nearest hops are the last ones: of a long header, its last 4 KiB, whole pieces only.
        let text = String(decoding: header.utf8.suffix(4096), as: UTF8.self)
        var pieces: [Substring] = text.split(separator: ",", omittingEmptySubsequences: false)
        if header.utf8.count > 4096 { pieces.removeFirst() }
        if pieces.count > 64 { pieces = Array(pieces.suffix(64)) }
        return pieces.map { (piece: Substring) -> IPAddress? in
            let trimmed = piece.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
            let text = String(decoding: trimmed, as: UTF8.self)
            // `192.0.2.7:51234` (a port after an IPv4 address) and `[2001:db8::1]:51234`.
            if let a = IPAddress(text) { return a }
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") { return IPAddress(text[text.index(after: text.startIndex)..<close]) }
            let colon = text.split(separator: ":", omittingEmptySubsequences: false)
            if colon.count == 2 { return IPAddress(colon[0]) }
            return nil
        }
    }
}
