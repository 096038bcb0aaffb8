/// What LiveRelay reads in a compound RTCP packet (RFC 3550, RFC 4585, RFC 5104): a sender's
/// clock (its report), its goodbye, and a receiver's feedback (which packets it lost, whether it
/// wants a keyframe). Receiver reports and anything else are skipped; a packet whose length
/// overruns ends the walk. The one RTCP walker: LiveRelay's RTSP client reads sender reports
/// and BYE with it, WebRTC its viewers' feedback, the bench's load viewer its sender reports.
/// Never traps on a peer's bytes.
public enum RTCPMessage: Sendable, Equatable {
    /// A sender report: the sender's wall clock (NTP, as Unix microseconds) at `rtpTime`.
    case senderReport(ssrc: UInt32, unixMicros: Int64, rtpTime: UInt32)
    /// The sender leaves (BYE).
    case bye
    /// Generic NACK: the media SSRC and the sequence numbers lost.
    case nack(ssrc: UInt32, sequenceNumbers: [UInt16])
    /// Picture loss indication.
    case pli(ssrc: UInt32)
    /// Full intra request.
    case fir(ssrc: UInt32)

    /// Seconds from NTP's era 0 (1900) to the Unix epoch.
    static let ntpToUnix: Int64 = 2_208_988_800

    public static func parse(_ b: some RandomAccessCollection<UInt8>) -> [RTCPMessage] {
        guard let start = b.indices.first else { return [] }
        func byte(_ at: Int) -> UInt8 { b[b.index(start, offsetBy: at)] }
        var out: [RTCPMessage] = []
        var i = 0
        while i + 4 <= b.count, out.count < 256 {
            guard byte(i) >> 6 == 2 else { break }
            let fmt = byte(i) & 0x1F, pt = byte(i + 1)
            let words = Int(byte(i + 2)) << 8 | Int(byte(i + 3))
            let end = i + 4 + words * 4
            guard end <= b.count else { break }
            func u32(_ at: Int) -> UInt32? {
                guard at + 4 <= end else { return nil }
                return UInt32(byte(at)) << 24 | UInt32(byte(at + 1)) << 16 | UInt32(byte(at + 2)) << 8 | UInt32(byte(at + 3))
            }
            switch (pt, fmt) {
            case (200, _) where end - i >= 28: // the header, the SSRC and the sender info
                if let ssrc = u32(i + 4), let ntpSeconds = u32(i + 8), let fraction = u32(i + 12), let rtpTime = u32(i + 16) {
                    let seconds = Int64(ntpSeconds) - ntpToUnix
                    // A clock before 1970 (unset, or NTP's era 1 misread) says nothing.
                    if seconds > 0 {
                        out.append(.senderReport(ssrc: ssrc, unixMicros: seconds * 1_000_000 + Int64((UInt64(fraction) * 1_000_000) >> 32), rtpTime: rtpTime))
                    }
                }
            case (203, _):
                out.append(.bye)
            case (205, 1):
                if let media = u32(i + 8) {
                    var seqs: [UInt16] = []
                    var at = i + 12
                    while at + 4 <= end, seqs.count < 1024 {
                        let pid = UInt16(byte(at)) << 8 | UInt16(byte(at + 1))
                        let blp = UInt16(byte(at + 2)) << 8 | UInt16(byte(at + 3))
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

    /// Whether a datagram is RTCP rather than RTP (RFC 5761: payload types 192–223, which no
    /// dynamic RTP payload type, with or without its marker bit, reaches).
    public static func isRTCP(_ b: some Collection<UInt8>) -> Bool {
        guard b.count >= 2 else { return false }
        return (192...223).contains(b[b.index(after: b.startIndex)])
    }
}
