import Wire

/// A client's `Transport` header, the parts LiveRelay serves: unicast RTP over the control
/// connection (interleaved) or over UDP to the client's ports.
enum RTSPTransport: Equatable {
    case interleaved(rtp: UInt8, rtcp: UInt8)
    case udp(rtpPort: Int, rtcpPort: Int)

    /// The first offer of the header LiveRelay can serve; nil when none (multicast only, or
    /// nothing readable).
    static func choose(_ header: String, track: Int) -> RTSPTransport? {
        for offer in RTSPTransportSpec.parseList(header) where offer.isRTP && !offer.isMulticast {
            if offer.isInterleaved {
                if let p = offer.interleaved { return .interleaved(rtp: p.rtp, rtcp: p.rtcp) }
                guard (0...127).contains(track) else { continue }
                return .interleaved(rtp: UInt8(track * 2), rtcp: UInt8(track * 2 + 1))
            }
            guard let p = offer.clientPort else { continue }
            return .udp(rtpPort: Int(p.rtp), rtcpPort: Int(p.rtcp))
        }
        return nil
    }
}
