internal import CFFmpeg
import MediaCore
import Wire
import Foundation

/// A camera's stream parameters for LiveRelay's RTSP client: video from FFmpeg's H.264 or H.265
/// decoder run on the first keyframe, audio from the SDP, parameter sets from the SDP's `sprop-…`.
enum RTSPStreamParameters {

    /// The video stream's parameters as FFmpeg's decoder reads them from the first keyframe
    /// (an Annex B access unit) with `extradata` (the parameter sets, Annex B); whether the
    /// decoder expects reordered pictures (B-frames).
    static func video(_ syntax: ParameterSets.Syntax, keyframe: [UInt8], extradata: [UInt8], source url: String) throws(IngestError) -> (parameters: CodecParameters, frameRate: Double?, mayReorder: Bool) {
        let name = syntax == .h264 ? "H.264" : "H.265"
        guard let codec = avcodec_find_decoder(syntax == .h264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC), var ctx = Optional(avcodec_alloc_context3(codec)), let c = ctx else {
            throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: "no \(name) decoder")
        }
        defer { avcodec_free_context(&ctx) }
        if !extradata.isEmpty, let buf = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
            extradata.withUnsafeBytes { _ = memcpy(buf, $0.baseAddress!, extradata.count) }
            c.pointee.extradata = buf.assumingMemoryBound(to: UInt8.self)
            c.pointee.extradata_size = Int32(extradata.count)
        }
        c.pointee.thread_count = 1
        var pkt = av_packet_alloc()
        defer { av_packet_free(&pkt) }
        guard let packet = pkt, avcodec_open2(c, codec, nil) >= 0, av_new_packet(packet, Int32(keyframe.count)) >= 0 else {
            throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: "could not open an \(name) decoder")
        }
        keyframe.withUnsafeBytes { _ = memcpy(packet.pointee.data, $0.baseAddress!, keyframe.count) }
        packet.pointee.flags = AV_PKT_FLAG_KEY
        _ = avcodec_send_packet(c, packet)
        if let frame = av_frame_alloc() {
            var f: UnsafeMutablePointer<AVFrame>? = frame
            _ = avcodec_receive_frame(c, frame)
            av_frame_free(&f)
        }
        guard c.pointee.width > 0, c.pointee.height > 0 else {
            throw IngestError(.invalidData, source: url, stage: RTSPSource.probingStage, detail: "the first keyframe could not be decoded (no parameter sets?)")
        }
        let rate = c.pointee.framerate.num > 0 && c.pointee.framerate.den > 0 ? av_q2d(c.pointee.framerate) : nil
        do {
            return (try CodecParameters(fromCodecContext: c), rate, c.pointee.has_b_frames > 0)
        } catch {
            throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: error.description)
        }
    }

    /// An audio stream's parameters from its SDP section (AAC: the `config` AudioSpecificConfig).
    static func audio(_ m: SDPTrack, format: RTPDepayloadFormat, source url: String) throws(IngestError) -> CodecParameters {
        guard let p = avcodec_parameters_alloc() else { throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: "out of memory") }
        var q: UnsafeMutablePointer<AVCodecParameters>? = p
        defer { avcodec_parameters_free(&q) }
        p.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        p.pointee.sample_rate = Int32(clamping: m.clockRate)
        var channels = m.channels ?? 1
        switch format {
        case .g711:
            p.pointee.codec_id = m.encoding == "PCMU" ? AV_CODEC_ID_PCM_MULAW : AV_CODEC_ID_PCM_ALAW
            p.pointee.bits_per_coded_sample = 8
        case .opus:
            // RFC 7587 always says 48000/2; the OpusHead (RFC 7845) tells muxers the channels.
            p.pointee.codec_id = AV_CODEC_ID_OPUS
            p.pointee.sample_rate = 48000
            channels = 2
            let head: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]
            if let buf = av_mallocz(head.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
                head.withUnsafeBytes { _ = memcpy(buf, $0.baseAddress!, head.count) }
                p.pointee.extradata = buf.assumingMemoryBound(to: UInt8.self)
                p.pointee.extradata_size = Int32(head.count)
            }
        default:
            p.pointee.codec_id = AV_CODEC_ID_AAC
            let config = Self.hex(m.fmtp["config"] ?? "")
            if config.count >= 2 {
                config.withUnsafeBufferPointer { b in
                    var r = BitReader(b)
                    var object = r.read(5)
                    if object == 31 { object = 32 + r.read(6) }
                    let rateIndex = r.read(4)
                    if rateIndex == 15 { _ = r.read(24) }
                    let c = r.read(4)
                    if m.channels == nil, (1...7).contains(c) { channels = c == 7 ? 8 : c }
                    p.pointee.profile = Int32(object - 1)
                }
                if let buf = av_mallocz(config.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
                    config.withUnsafeBytes { _ = memcpy(buf, $0.baseAddress!, config.count) }
                    p.pointee.extradata = buf.assumingMemoryBound(to: UInt8.self)
                    p.pointee.extradata_size = Int32(config.count)
                }
            }
        }
        av_channel_layout_default(&p.pointee.ch_layout, Int32(max(1, min(channels, 8))))
        do {
            return try CodecParameters(copying: p)
        } catch {
            throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: error.description)
        }
    }

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { return [] }
            out.append(v)
        }
        return out
    }
}
