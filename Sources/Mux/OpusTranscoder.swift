internal import CFFmpeg
public import MediaCore

/// An audio track WebRTC cannot carry (AAC, MP2, …) made Opus for it: decoded (libavcodec),
/// resampled to 48 kHz stereo (libswresample), cut into 20 ms frames (an audio FIFO) and
/// encoded with libopus. Timestamps are microseconds on the caller's continuous timeline: the
/// first sample of each Opus packet keeps the time of the input sample it came from, and a jump
/// of more than 200 ms in the input starts again from there. A packet that does not decode is
/// skipped and counted, never thrown: one bad audio packet must not end a viewer's session.
/// Confined to one thread (the feed's sender).
public final class OpusTranscoder {
    /// The Opus stream as a packetizer takes it (the source's index, a 1/48000 time base).
    public private(set) var streamInfo: StreamInfo
    /// Input packets that did not decode (damaged, or not what the source said).
    public private(set) var undecodable = 0

    private let sourceIndex: Int
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private let resampler: AudioResampler
    private let inFrame: UnsafeMutablePointer<AVFrame>
    private let outFrame: UnsafeMutablePointer<AVFrame>
    private let scratch: UnsafeMutablePointer<AVPacket>
    private let frameSize: Int32
    /// The time (1/48000) of the FIFO's first sample; nil before the first input or after a jump.
    private var headPTS: Int64?
    /// The time (µs) the next input packet should start at, if the input runs on.
    private var expectedInputUs: Int64?

    static let rate: Int32 = 48_000
    static let format = AV_SAMPLE_FMT_S16

    public init(source: StreamInfo, bitrate: Int = 64_000) throws(FFmpegError) {
        sourceIndex = source.index
        guard let inFrame = av_frame_alloc(), let outFrame = av_frame_alloc(), let pkt = av_packet_alloc() else {
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc")
        }
        self.inFrame = inFrame
        self.outFrame = outFrame
        scratch = pkt
        resampler = try AudioResampler(rate: Self.rate, format: Self.format, channels: 2)
        // Every stored property is set from here: deinit frees what exists if a step throws.
        frameSize = 960
        streamInfo = source
        let codecID = source.parameters.withUnsafeAVCodecParameters { $0.pointee.codec_id }
        guard let dec = avcodec_find_decoder(codecID) else {
            throw FFmpegError(code: lr_averror_decoder_not_found(), operation: "no decoder for \(source.codecName)")
        }
        decoder = avcodec_alloc_context3(dec)
        guard let decoder else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3") }
        try ffcheck(source.parameters.withUnsafeAVCodecParameters { avcodec_parameters_to_context(decoder, $0) }, "avcodec_parameters_to_context")
        decoder.pointee.pkt_timebase = av_make_q(1, 1_000_000)
        try ffcheck(avcodec_open2(decoder, dec, nil), "avcodec_open2 (\(source.codecName) decoder)")

        guard let enc = avcodec_find_encoder_by_name("libopus") else {
            throw FFmpegError(code: lr_averror_decoder_not_found(), operation: "no libopus encoder in this FFmpeg")
        }
        encoder = avcodec_alloc_context3(enc)
        guard let encoder else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3") }
        encoder.pointee.sample_rate = Self.rate
        encoder.pointee.sample_fmt = Self.format
        var stereo = lr_stereo_layout()
        try ffcheck(av_channel_layout_copy(&encoder.pointee.ch_layout, &stereo), "av_channel_layout_copy")
        encoder.pointee.bit_rate = Int64(bitrate)
        encoder.pointee.time_base = av_make_q(1, Self.rate)
        _ = av_opt_set(encoder.pointee.priv_data, "application", "lowdelay", 0)
        _ = av_opt_set(encoder.pointee.priv_data, "frame_duration", "20", 0)
        try ffcheck(avcodec_open2(encoder, enc, nil), "avcodec_open2 (libopus)")
        let opus = try CodecParameters(fromCodecContext: encoder)
        streamInfo = StreamInfo(index: source.index, timeBase: TimeBase(1, Self.rate), frameRate: nil, parameters: opus)
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

    /// The Opus packets that `packet` (at `pts`, µs) completes, their times in µs.
    public func transcode(_ packet: Packet, pts: Int64?) -> [(packet: Packet, pts: Int64)] {
        guard let decoder, let pts else { return [] }
        if let expected = expectedInputUs, abs(expected.subtractingReportingOverflow(pts).partialValue) > 200_000 {
            // The input jumped (a reconnect, a gap): start again from this packet's time.
            resampler.reset()
            headPTS = nil
        }
        let sent: Int32 = packet.withUnsafeAVPacket { p in
            guard av_packet_ref(scratch, p) >= 0 else { return -1 }
            scratch.pointee.pts = pts
            scratch.pointee.dts = pts
            defer { av_packet_unref(scratch) }
            return avcodec_send_packet(decoder, scratch)
        }
        guard sent >= 0 else {
            undecodable += 1
            return []
        }
        while avcodec_receive_frame(decoder, inFrame) >= 0 {
            defer { av_frame_unref(inFrame) }
            let start = inFrame.pointee.pts == lr_nopts_value() ? pts : inFrame.pointee.pts
            if headPTS == nil { headPTS = av_rescale(start, Int64(Self.rate), 1_000_000) }
            let rate = max(inFrame.pointee.sample_rate, 1)
            expectedInputUs = start.addingReportingOverflow(av_rescale(Int64(inFrame.pointee.nb_samples), 1_000_000, Int64(rate))).partialValue
            guard resampler.append(inFrame) else {
                undecodable += 1
                continue
            }
        }
        return encodeWhole()
    }

    /// Encodes every whole 20 ms frame the FIFO holds.
    private func encodeWhole() -> [(packet: Packet, pts: Int64)] {
        guard let encoder else { return [] }
        var out: [(packet: Packet, pts: Int64)] = []
        while resampler.buffered >= frameSize, let head = headPTS {
            guard resampler.take(frameSize, into: outFrame) else { break }
            outFrame.pointee.pts = head
            headPTS = head + Int64(frameSize)
            guard avcodec_send_frame(encoder, outFrame) >= 0 else { break }
            while avcodec_receive_packet(encoder, scratch) >= 0 {
                let us = av_rescale(scratch.pointee.pts, 1_000_000, Int64(Self.rate))
                scratch.pointee.stream_index = Int32(sourceIndex)
                if let p = try? Packet(movingFrom: scratch, timeBase: .microseconds, mediaType: .audio, arrivalNanos: 0) {
                    out.append((p, us))
                }
            }
        }
        return out
    }
}

@available(*, unavailable)
extension OpusTranscoder: Sendable {}
