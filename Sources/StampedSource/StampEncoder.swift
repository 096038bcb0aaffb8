internal import CFFmpeg
public import MediaCore

/// Settings of the test source's encoder (libx264, or libx265 for H.265, through libavcodec).
public struct EncoderSettings: Sendable, Hashable {
    public enum Codec: String, Sendable, Hashable { case h264, hevc }
    /// `codec`: H.264 (libx264) or H.265 (libx265, Main, the same tune and preset).
    public var codec = Codec.h264
    public var width = 640
    public var height = 360
    public var fps = 30
    /// Frames between keyframes.
    public var gop = 30
    public var bitrateKbps = 1000
    public var preset = "ultrafast"
    public var tune = "zerolatency"
    /// Encoder threads (0: libx264 picks). zerolatency uses sliced threads: no added delay.
    public var threads = 0
    /// B-frames between references (0: none). With B-frames the stream has a reorder delay,
    /// as many cameras' streams do; the zerolatency tune (which forbids them) is not used then.
    public var bframes = 0
    /// Keyframes only where the caller forces them (a frame whose picture type is I): the GOP
    /// becomes whatever the caller makes it, e.g. irregular.
    public var forcedKeyframesOnly = false

    public init() {}
    public init(width: Int, height: Int, fps: Int, gop: Int, bitrateKbps: Int = 1000) {
        self.width = width
        self.height = height
        self.fps = fps
        self.gop = gop
        self.bitrateKbps = bitrateKbps
    }
}

/// Encodes YUV420P frames to H.264 or H.265. Keyframes carry their parameter sets in band as
/// well as in the extradata, so any packet sink can resume at a keyframe. Confined to one thread.
public final class StampEncoder {
    public let settings: EncoderSettings
    /// One tick per frame.
    public let timeBase: TimeBase
    public let parameters: CodecParameters
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let scratch: UnsafeMutablePointer<AVPacket>

    public init(settings: EncoderSettings) throws(FFmpegError) {
        self.settings = settings
        let library = settings.codec == .h264 ? "libx264" : "libx265"
        guard let codec = avcodec_find_encoder_by_name(library) else {
            throw FFmpegError(code: FFmpegError.posix(ENOENT), operation: "avcodec_find_encoder_by_name(\(library))")
        }
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        guard let ctx = avcodec_alloc_context3(codec) else {
            var p: UnsafeMutablePointer<AVPacket>? = pkt; av_packet_free(&p)
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3")
        }
        context = ctx
        ctx.pointee.width = Int32(settings.width)
        ctx.pointee.height = Int32(settings.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = av_make_q(1, Int32(settings.fps))
        ctx.pointee.framerate = av_make_q(Int32(settings.fps), 1)
        // Forced keyframes only: x264's own would come far later than any the caller forces.
        ctx.pointee.gop_size = Int32(settings.forcedKeyframesOnly ? settings.gop * 100 : settings.gop)
        ctx.pointee.keyint_min = Int32(settings.forcedKeyframesOnly ? 1 : settings.gop)
        ctx.pointee.max_b_frames = Int32(settings.bframes)
        ctx.pointee.bit_rate = Int64(settings.bitrateKbps) * 1000
        ctx.pointee.rc_max_rate = Int64(settings.bitrateKbps) * 1500
        ctx.pointee.rc_buffer_size = Int32(settings.bitrateKbps * 1000)
        ctx.pointee.thread_count = Int32(settings.threads)
        ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        var opts: OpaquePointer? = nil
        av_dict_set(&opts, "preset", settings.preset, 0)
        // In-band parameter sets on every keyframe (GLOBAL_HEADER alone would strip them), fixed GOP.
        var params = "repeat-headers=1:scenecut=0"
        if settings.bframes > 0 {
            // A fixed pattern (no adaptive B decisions) and the shortest lookahead that allows it.
            params += ":bframes=\(settings.bframes):b-adapt=0:rc-lookahead=\(settings.bframes + 1)"
            if settings.codec == .h264 { params += ":sync-lookahead=0" }
        } else {
            av_dict_set(&opts, "tune", settings.tune, 0)
        }
        if settings.codec == .hevc {
            // Main (4:2:0, 8-bit), and quiet: libx265 prints its settings to stderr otherwise.
            // (FFmpeg hands gop_size and keyint_min to libx265 as keyint and min-keyint itself.)
            av_dict_set(&opts, "profile", "main", 0)
            params += ":log-level=error"
        }
        av_dict_set(&opts, settings.codec == .h264 ? "x264-params" : "x265-params", params, 0)
        defer { av_dict_free(&opts) }
        let r = avcodec_open2(ctx, codec, &opts)
        if r < 0 {
            avcodec_free_context(&context)
            var p: UnsafeMutablePointer<AVPacket>? = pkt; av_packet_free(&p)
            throw FFmpegError(code: r, operation: "avcodec_open2(\(library))")
        }
        timeBase = TimeBase(ctx.pointee.time_base)
        do {
            parameters = try CodecParameters(fromCodecContext: ctx)
        } catch {
            avcodec_free_context(&context)
            var p: UnsafeMutablePointer<AVPacket>? = pkt; av_packet_free(&p)
            throw error
        }
    }

    deinit {
        if context != nil { avcodec_free_context(&context) }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// Encodes one frame (its pts in `timeBase`); returns the packets that came out.
    /// `arrivalNanos` stamps the packets (the test source's capture instant).
    public func encode(_ frame: Frame, arrivalNanos: UInt64 = MonotonicClock.nanoseconds()) throws(FFmpegError) -> [Packet] {
        guard let ctx = context else { return [] }
        try ffcheck(frame.withUnsafeAVFrame { avcodec_send_frame(ctx, $0) }, "avcodec_send_frame")
        return try receive(arrivalNanos: arrivalNanos)
    }

    /// Drains the encoder at the end.
    public func flush() throws(FFmpegError) -> [Packet] {
        guard let ctx = context else { return [] }
        avcodec_send_frame(ctx, nil)
        return try receive(arrivalNanos: MonotonicClock.nanoseconds())
    }

    private func receive(arrivalNanos: UInt64) throws(FFmpegError) -> [Packet] {
        guard let ctx = context else { return [] }
        var out: [Packet] = []
        while true {
            let r = avcodec_receive_packet(ctx, scratch)
            if r == FFmpegError.tryAgain || r == FFmpegError.endOfFile { break }
            try ffcheck(r, "avcodec_receive_packet")
            scratch.pointee.stream_index = 0
            out.append(try Packet(movingFrom: scratch, timeBase: timeBase, mediaType: .video, arrivalNanos: arrivalNanos))
        }
        return out
    }
}

@available(*, unavailable)
extension StampEncoder: Sendable {}
