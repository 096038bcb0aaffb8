public import MediaCore
public import Mux

/// A stream's packets in RTP as WebRTC carries them: video as it is, audio in a codec WebRTC
/// does not carry (AAC …) made Opus first (the track left as it is when it cannot be). One per
/// connection's tracks; confined to its caller. The WHEP viewers' shared cut (`RTPCut`) and a
/// WHIP push (`WHIPPusher`) both cut with it.
package final class WebRTCPacketizer: RTPPacketizing {
    package let packetizer: RTPPacketizer
    private let transcoders: [Int: OpusTranscoder]

    package init(streams source: [StreamInfo], title: String, maxPacketSize: Int, audioToOpus: Bool = true) throws(FFmpegError) {
        var streams = source
        var transcoders: [Int: OpusTranscoder] = [:]
        if audioToOpus {
            for (i, s) in streams.enumerated() where s.mediaType == .audio && !RTPFeed.webRTCAudio.contains(s.codecName) {
                guard let t = try? OpusTranscoder(source: s) else { continue }
                transcoders[s.index] = t
                streams[i] = t.streamInfo
            }
        }
        packetizer = try RTPPacketizer(streams: streams, title: title, maxPacketSize: maxPacketSize)
        self.transcoders = transcoders
    }

    package var tracks: [RTPPacketizer.Track] { packetizer.tracks }
    package var sdp: String { packetizer.sdp }
    package var skipped: [String] { packetizer.skipped }

    /// One packet's RTP (timestamps in microseconds), transcoded first where its track is.
    package func packetize(_ packet: Packet, pts: Int64?, dts: Int64?) throws(FFmpegError) -> [RTPPacketizer.Datagram] {
        guard let t = transcoders[packet.streamIndex] else { return try packetizer.packetize(packet, pts: pts, dts: dts) }
        var out: [RTPPacketizer.Datagram] = []
        for o in t.transcode(packet, pts: pts ?? dts ?? 0) { out += try packetizer.packetize(o.packet, pts: o.pts, dts: o.pts) }
        return out
    }
}
