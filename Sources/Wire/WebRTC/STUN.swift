/// STUN messages (RFC 8489) as ICE uses them (RFC 8445): a Binding request a browser sends to
/// check a candidate pair, and the answer a server gives. Parsed without a trap from bytes a
/// peer controls: a message that does not parse is nil, an attribute that overruns is the end.
/// The integrity check (HMAC-SHA1) is the caller's: Wire has no cryptography; it hands out the
/// bytes the HMAC covers.
public struct STUNMessage: Sendable, Equatable {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerSize = 20

    /// Method and class in one (0x0001 Binding request, 0x0101 success, 0x0111 error).
    public var type: UInt16
    public var transactionID: [UInt8]
    /// Attributes in order: type and value (without padding).
    public var attributes: [(type: UInt16, value: [UInt8])]
    /// Where MESSAGE-INTEGRITY starts in the message, when it has one: the HMAC covers the
    /// bytes before it, with the length field counting up to the end of MESSAGE-INTEGRITY.
    public var integrityOffset: Int?

    public enum Attribute {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    public static let bindingRequest: UInt16 = 0x0001
    public static let bindingSuccess: UInt16 = 0x0101
    public static let bindingError: UInt16 = 0x0111

    public init(type: UInt16, transactionID: [UInt8], attributes: [(type: UInt16, value: [UInt8])] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    public static func == (a: STUNMessage, b: STUNMessage) -> Bool {
        a.type == b.type && a.transactionID == b.transactionID && a.attributes.count == b.attributes.count
            && zip(a.attributes, b.attributes).allSatisfy { $0.type == $1.type && $0.value == $1.value }
    }

    /// Whether the datagram looks like STUN (RFC 7983's demultiplexing: first byte 0–3, and
    /// the magic cookie).
    public static func looksLikeSTUN(_ b: [UInt8]) -> Bool {
        b.count >= headerSize && b[0] < 4 && b[4] == 0x21 && b[5] == 0x12 && b[6] == 0xA4 && b[7] == 0x42
    }

    /// Nil unless `bytes` is one whole STUN message with the magic cookie.
    public init?(parsing bytes: [UInt8]) {
        guard Self.looksLikeSTUN(bytes), bytes.count <= 65_535 else { return nil }
        type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length % 4 == 0, Self.headerSize + length == bytes.count else { return nil }
        transactionID = Array(bytes[8..<20])
        attributes = []
        var i = Self.headerSize
        while i + 4 <= bytes.count {
            let t = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            let n = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard i + 4 + n <= bytes.count else { return nil }
            if t == Attribute.messageIntegrity, integrityOffset == nil { integrityOffset = i }
            attributes.append((t, Array(bytes[(i + 4)..<(i + 4 + n)])))
            i += 4 + (n + 3) / 4 * 4
            if attributes.count > 64 { return nil }
        }
    }

    public func attribute(_ type: UInt16) -> [UInt8]? { attributes.first { $0.type == type }?.value }

    /// USERNAME as text (`server-ufrag:client-ufrag` in an ICE check), if valid UTF-8.
    public var username: String? {
        guard let u = attribute(Attribute.username), u.count <= 513 else { return nil }
        return String(validating: u, as: UTF8.self)
    }

    /// The bytes MESSAGE-INTEGRITY's HMAC covers in `raw` (this message's bytes): the header
    /// with its length counting to the end of MESSAGE-INTEGRITY, and every attribute before it.
    public func integrityInput(_ raw: [UInt8]) -> [UInt8]? {
        guard let at = integrityOffset, at + 24 <= raw.count else { return nil }
        var b = Array(raw[0..<at])
        let length = at - Self.headerSize + 24
        b[2] = UInt8(length >> 8)
        b[3] = UInt8(length & 0xFF)
        return b
    }

    /// The message's bytes. `integrity`, given the bytes it must cover, returns the 20-byte
    /// HMAC-SHA1; `fingerprint` adds FINGERPRINT (CRC-32 xor 0x5354554E) last.
    public func serialized(integrity: (([UInt8]) -> [UInt8])? = nil, fingerprint: Bool = true) -> [UInt8] {
        var b: [UInt8] = [UInt8(type >> 8), UInt8(type & 0xFF), 0, 0, 0x21, 0x12, 0xA4, 0x42] + transactionID.prefix(12)
        while b.count < Self.headerSize { b.append(0) }
        func append(_ t: UInt16, _ v: [UInt8]) {
            b += [UInt8(t >> 8), UInt8(t & 0xFF), UInt8((v.count >> 8) & 0xFF), UInt8(v.count & 0xFF)] + v
            while b.count % 4 != 0 { b.append(0) }
        }
        func setLength(_ n: Int) {
            b[2] = UInt8((n >> 8) & 0xFF)
            b[3] = UInt8(n & 0xFF)
        }
        for a in attributes where a.type != Attribute.messageIntegrity && a.type != Attribute.fingerprint { append(a.type, a.value) }
        if let integrity {
            setLength(b.count - Self.headerSize + 24)
            append(Attribute.messageIntegrity, integrity(b))
        }
        if fingerprint {
            setLength(b.count - Self.headerSize + 8)
            let crc = CRC32.checksum(b) ^ 0x5354_554E
            append(Attribute.fingerprint, [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)])
        }
        setLength(b.count - Self.headerSize)
        return b
    }

    /// Whether FINGERPRINT, if present, matches (it must be the last attribute).
    public func fingerprintMatches(_ raw: [UInt8]) -> Bool {
        guard let last = attributes.last, last.type == Attribute.fingerprint else { return true }
        guard last.value.count == 4, raw.count >= 8 else { return false }
        var b = Array(raw[0..<(raw.count - 8)])
        let n = raw.count - Self.headerSize
        b[2] = UInt8((n >> 8) & 0xFF)
        b[3] = UInt8(n & 0xFF)
        let crc = CRC32.checksum(b) ^ 0x5354_554E
        let v = last.value
        return UInt32(v[0]) << 24 | UInt32(v[1]) << 16 | UInt32(v[2]) << 8 | UInt32(v[3]) == crc
    }

    /// XOR-MAPPED-ADDRESS's value for an IPv4 or IPv6 address (4 or 16 bytes) and port.
    public static func xorMappedAddress(ip: [UInt8], port: UInt16, transactionID: [UInt8]) -> [UInt8] {
        let cookie: [UInt8] = [0x21, 0x12, 0xA4, 0x42]
        let xport = port ^ 0x2112
        var v: [UInt8] = [0, ip.count == 16 ? 2 : 1, UInt8(xport >> 8), UInt8(xport & 0xFF)]
        let mask = cookie + transactionID.prefix(12)
        for (i, byte) in ip.prefix(16).enumerated() { v.append(byte ^ mask[i % mask.count]) }
        return v
    }

    /// ERROR-CODE's value: class and number, and a reason.
    public static func errorCode(_ code: Int, _ reason: String) -> [UInt8] {
        [0, 0, UInt8((code / 100) & 0x7), UInt8(code % 100)] + Array(reason.utf8.prefix(128))
    }
}

/// CRC-32 (ISO-HDLC, as zlib), for STUN's FINGERPRINT.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
