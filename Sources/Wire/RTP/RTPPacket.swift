/// One RTP packet (RFC 3550 §5.1) as LiveRelay's talk path reads and writes it: the fixed
/// header, and where the payload lies past any CSRCs, header extension and padding. Reading
/// never traps on a peer's bytes; a packet whose lengths do not add up is nil.
public struct RTPPacket: Sendable, Equatable {
    public var payloadType: UInt8
    public var marker: Bool
    public var sequence: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var payload: ArraySlice<UInt8>

    public init(payloadType: UInt8, marker: Bool = false, sequence: UInt16, timestamp: UInt32, ssrc: UInt32, payload: ArraySlice<UInt8>) {
        self.payloadType = payloadType & 0x7F
        self.marker = marker
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.payload = payload
    }

    /// Reads a datagram; nil when it is not RTP version 2 or its lengths overrun it.
    public init?(parsing b: [UInt8]) {
        guard b.count >= 12, b[0] >> 6 == 2 else { return nil }
        var start = 12 + Int(b[0] & 0x0F) * 4
        guard start <= b.count else { return nil }
        if b[0] & 0x10 != 0 {
            // The extension: 2 bytes of profile, 2 of length in 32-bit words, then the words.
            guard start + 4 <= b.count else { return nil }
            start += 4 + (Int(b[start + 2]) << 8 | Int(b[start + 3])) * 4
            guard start <= b.count else { return nil }
        }
        var end = b.count
        if b[0] & 0x20 != 0 {
            guard let last = b.last, last > 0, Int(last) <= end - start else { return nil }
            end -= Int(last)
        }
        payloadType = b[1] & 0x7F
        marker = b[1] & 0x80 != 0
        sequence = UInt16(b[2]) << 8 | UInt16(b[3])
        timestamp = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
        ssrc = UInt32(b[8]) << 24 | UInt32(b[9]) << 16 | UInt32(b[10]) << 8 | UInt32(b[11])
        payload = b[start..<end]
    }

    /// The packet's bytes: the 12-byte header (no CSRC, no extension), then the payload.
    public var bytes: [UInt8] {
        var b = [UInt8](repeating: 0, count: 12)
        b.reserveCapacity(12 + payload.count)
        b[0] = 0x80
        b[1] = (marker ? 0x80 : 0) | (payloadType & 0x7F)
        b[2] = UInt8(sequence >> 8)
        b[3] = UInt8(sequence & 0xFF)
        for (i, v) in [timestamp, ssrc].enumerated() {
            b[4 + 4 * i] = UInt8(v >> 24)
            b[5 + 4 * i] = UInt8((v >> 16) & 0xFF)
            b[6 + 4 * i] = UInt8((v >> 8) & 0xFF)
            b[7 + 4 * i] = UInt8(v & 0xFF)
        }
        b += payload
        return b
    }

    /// An MPEG-4 audio payload (RFC 3640, `mode=AAC-hbr`: 13-bit sizes, 3-bit indexes) holding
    /// one access unit: the AU-headers-length in bits, one AU header, the unit. Nil for a unit
    /// larger than a 13-bit size can say.
    public static func aacHBR(_ unit: some Collection<UInt8>) -> [UInt8]? {
        guard unit.count < 1 << 13 else { return nil }
        let size = UInt16(unit.count) << 3
        return [0x00, 0x10, UInt8(size >> 8), UInt8(size & 0xFF)] + unit
    }
}
