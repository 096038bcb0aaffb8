internal import CFFmpeg
public import MediaCore

/// An operator's voice, as WebRTC brings it (Opus, 48 kHz), made what a camera's speaker takes
/// (`TalkFormat`: G.711 µ-law or A-law, or AAC): each Opus packet decoded (libavcodec),
/// resampled to the camera's rate and channels (libswresample) and encoded in frames of 20 ms
/// (G.711) or the encoder's own (AAC, 1024 samples). A packet that does not decode is counted
/// and skipped: a bad packet from a talker must not end the talk. Confined to one thread (the
/// talk session's).
public final class TalkEncoder {
    public let format: TalkFormat
    /// Opus packets that did not decode.
    public private(set) var undecodable = 0
    /// The AAC encoder's AudioSpecificConfig (what its frames need the camera to expect).
    public private(set) var encoderConfig: [UInt8] = []

    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private let resampler: AudioResampler
    private let inFrame: UnsafeMutablePointer<AVFrame>
    private let outFrame: UnsafeMutablePointer<AVFrame>
    private let scratch: UnsafeMutablePointer<AVPacket>
    private var frameSize: Int32
    private var nextPTS: Int64 = 0

    public init(format: TalkFormat) throws(FFmpegError) {
        self.format = format
        let name: String, sampleFormat: AVSampleFormat
        switch format.encoding {
        case "PCMU": (name, sampleFormat) = ("pcm_mulaw", AV_SAMPLE_FMT_S16)
        case "PCMA": (name, sampleFormat) = ("pcm_alaw", AV_SAMPLE_FMT_S16)
        case "MPEG4-GENERIC": (name, sampleFormat) = ("aac", AV_SAMPLE_FMT_FLTP)
        default: (name, sampleFormat) = ("", AV_SAMPLE_FMT_S16)
        }
        let rate = Int32(clamping: format.clockRate), channels = Int32(clamping: format.channels)
        resampler = try AudioResampler(rate: rate, format: sampleFormat, channels: channels)
        // Made after the resampler, whose failure would leave them to no deinit.
        guard let inFrame = av_frame_alloc(), let outFrame = av_frame_alloc(), let pkt = av_packet_alloc() else {
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc")
        }
        self.inFrame = inFrame
        self.outFrame = outFrame
        scratch = pkt
        frameSize = max(1, rate / 50)
        // Opus in RTP is 48 kHz stereo (RFC 7587); FFmpeg's decoders give 48 kHz whatever is asked.
        guard let dec = avcodec_find_decoder(AV_CODEC_ID_OPUS) else {
            throw FFmpegError(code: lr_averror_decoder_not_found(), operation: "no Opus decoder in this FFmpeg")
        }
        decoder = avcodec_alloc_context3(dec)
        guard let decoder else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3") }
        decoder.pointee.sample_rate = 48_000
        var stereo = lr_stereo_layout()
        try ffcheck(av_channel_layout_copy(&decoder.pointee.ch_layout, &stereo), "av_channel_layout_copy")
        try ffcheck(avcodec_open2(decoder, dec, nil), "avcodec_open2 (opus decoder)")
        guard !name.isEmpty, let enc = avcodec_find_encoder_by_name(name) else {
            throw FFmpegError(code: lr_averror_decoder_not_found(), operation: "no encoder for the talk format \(format)")
        }
        encoder = avcodec_alloc_context3(enc)
        guard let encoder else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3") }
        encoder.pointee.sample_rate = rate
        encoder.pointee.sample_fmt = sampleFormat
        var layout = resampler.layout()
        try ffcheck(av_channel_layout_copy(&encoder.pointee.ch_layout, &layout), "av_channel_layout_copy")
        encoder.pointee.time_base = av_make_q(1, rate)
        if name == "aac" {
            encoder.pointee.bit_rate = Int64(min(64_000, Int(rate) * 4 * Int(channels)))
            encoder.pointee.profile = 1 // FF_PROFILE_AAC_LOW
            // The camera's config is sent once in its SDP: frames must not need another.
            encoder.pointee.flags |= Int32(bitPattern: UInt32(AV_CODEC_FLAG_GLOBAL_HEADER))
        }
        try ffcheck(avcodec_open2(encoder, enc, nil), "avcodec_open2 (\(name))")
        if let e = encoder.pointee.extradata, encoder.pointee.extradata_size > 0 {
            encoderConfig = Array(UnsafeBufferPointer(start: e, count: Int(encoder.pointee.extradata_size)))
        }
        if encoder.pointee.frame_size > 0 { frameSize = encoder.pointee.frame_size }
    }

    deinit {
        avcodec_free_context(&decoder)
        avcodec_free_context(&encoder)
        var f: UnsafeMutablePointer<AVFrame>? = inFrame
        av_frame_free(&f)
        f = outFrame
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// The samples of each encoded unit, at the format's clock rate (20 ms for G.711).
    public var samplesPerUnit: Int { Int(frameSize) }

    /// The camera's encoded units that one Opus packet completes (none while a frame fills).
    public func encode(opus: some Collection<UInt8>) -> [[UInt8]] {
        guard let decoder, !opus.isEmpty, opus.count <= 4000 else { return [] }
        let bytes = Array(opus)
        let sent: Int32 = bytes.withUnsafeBufferPointer { b in
            guard av_new_packet(scratch, Int32(b.count)) >= 0 else { return -1 }
            defer { av_packet_unref(scratch) }
            scratch.pointee.data.update(from: b.baseAddress!, count: b.count)
            return avcodec_send_packet(decoder, scratch)
        }
        guard sent >= 0 else {
            undecodable += 1
            return []
        }
        while avcodec_receive_frame(decoder, inFrame) >= 0 {
            defer { av_frame_unref(inFrame) }
            if !resampler.append(inFrame) { undecodable += 1 }
        }
        return encodeWhole()
    }

    private func encodeWhole() -> [[UInt8]] {
        guard let encoder else { return [] }
        var out: [[UInt8]] = []
        while resampler.buffered >= frameSize {
            guard resampler.take(frameSize, into: outFrame) else { break }
            outFrame.pointee.pts = nextPTS
            nextPTS += Int64(frameSize)
            guard avcodec_send_frame(encoder, outFrame) >= 0 else { break }
            while avcodec_receive_packet(encoder, scratch) >= 0 {
                if let d = scratch.pointee.data, scratch.pointee.size > 0 {
                    out.append(Array(UnsafeBufferPointer(start: d, count: Int(scratch.pointee.size))))
                }
                av_packet_unref(scratch)
            }
        }
        return out
    }
}

@available(*, unavailable)
extension TalkEncoder: Sendable {}
