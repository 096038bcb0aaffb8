internal import CFFmpeg
import MediaCore
import Wire

/// Parameter sets put in front of keyframes that lack them, on FFmpeg packets (the muxers and
/// RTP packetizers). The bitstream reading itself is Wire's `H264`.
enum AnnexB {
    /// References `packet` in `scratch`; a keyframe without parameter sets gets `parameterSets`
    /// (Annex B) in front, in a copy.
    static func reference(_ packet: Packet, into scratch: UnsafeMutablePointer<AVPacket>,
                          parameterSets ps: (sets: [UInt8], hevc: Bool)?) throws(FFmpegError) {
        if let ps, packet.isKeyframe, !packet.withUnsafeAVPacket({ hasParameterSets($0, hevc: ps.hevc) }) {
            try prepend(ps.sets, to: packet, into: scratch)
        } else {
            try ffcheck(packet.withUnsafeAVPacket { av_packet_ref(scratch, $0) }, "av_packet_ref")
        }
    }

    /// `bytes` then `packet`'s payload, in a new packet in `scratch` with the packet's properties.
    static func prepend(_ bytes: [UInt8], to packet: Packet, into scratch: UnsafeMutablePointer<AVPacket>) throws(FFmpegError) {
        let size = packet.size
        try ffcheck(av_new_packet(scratch, Int32(bytes.count + size)), "av_new_packet")
        bytes.withUnsafeBufferPointer { scratch.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
        packet.withUnsafeAVPacket { src in
            if let d = src.pointee.data { (scratch.pointee.data + bytes.count).update(from: d, count: size) }
            _ = av_packet_copy_props(scratch, src)
        }
    }

    /// True when the packet carries both a sequence and a picture parameter set (H.264 types 7
    /// and 8, HEVC 33 and 34): a keyframe that lost its PPS to the network needs them as much as
    /// one that never had them.
    static func hasParameterSets(_ p: UnsafePointer<AVPacket>, hevc: Bool) -> Bool {
        guard let d = p.pointee.data, p.pointee.size > 0 else { return false }
        return H264.hasParameterSets(annexB: UnsafeBufferPointer(start: d, count: Int(p.pointee.size)), hevc: hevc)
    }
}
