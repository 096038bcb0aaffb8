/// Feedback a receiver sends in (decrypted) compound RTCP (RFC 4585, RFC 5104): which packets
/// it lost, and whether it wants a keyframe. Reports and anything else are skipped; a packet
/// whose length overruns ends the parse. Never traps on a peer's bytes.
public enum RTCPFeedback: Sendable, Equatable {
    /// Generic NACK: the media SSRC and the sequence numbers lost.
    case nack(ssrc: UInt32, sequenceNumbers: [UInt16])
    /// Picture loss indication.
    case pli(ssrc: UInt32)
    /// Full intra request.
    case fir(ssrc: UInt32)

    public static func parse(_ b: [UInt8]) -> [RTCPFeedback] {
        var out: [RTCPFeedback] = []
        var i = 0
        while i + 4 <= b.count, out.count < 256 {
            guard b[i] >> 6 == 2 else { break }
            let fmt = b[i] & 0x1F, pt = b[i + 1]
            let words = Int(b[i + 2]) << 8 | Int(b[i + 3])
            let end = i + 4 + words * 4
            guard end <= b.count else { break }
            func u32(_ at: Int) -> UInt32? {
                guard at + 4 <= end else { return nil }
                return UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
            }
            switch (pt, fmt) {
            case (205, 1):
                if let media = u32(i + 8) {
                    var seqs: [UInt16] = []
                    var at = i + 12
                    while at + 4 <= end, seqs.count < 1024 {
                        let pid = UInt16(b[at]) << 8 | UInt16(b[at + 1])
                        let blp = UInt16(b[at + 2]) << 8 | UInt16(b[at + 3])
                        seqs.append(pid)
                        for k in 0..<16 where blp & (1 << k) != 0 { seqs.append(pid &+ UInt16(k + 1)) }
                        at += 4
                    }
                    out.append(.nack(ssrc: media, sequenceNumbers: seqs))
                }
            case (206, 1):
                if let media = u32(i + 8) { out.append(.pli(ssrc: media)) }
            case (206, 4):
                if let media = u32(i + 12) { out.append(.fir(ssrc: media)) }
            default:
                break
            }
            i = end
        }
        return out
    }

    /// Whether a datagram on an RTP/RTCP-muxed port is RTCP (RFC 5761: payload types 192–223).
    public static func isRTCP(_ b: [UInt8]) -> Bool { b.count >= 2 && (192...223).contains(b[1]) }
}
