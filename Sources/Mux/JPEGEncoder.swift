internal import CFFmpeg
public import MediaCore

/// Encodes pictures to JPEG (libavcodec's mjpeg) for previews and snapshots. Input must be
/// YUVJ420P of the size given at creation. Confined to one thread.
public final class JPEGEncoder {
    public let width: Int
    public let height: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let scratch: UnsafeMutablePointer<AVPacket>
    /// The encoder's own picture count: FFmpeg's MJPEG encoder refuses a timestamp that does
    /// not rise, and pictures may come again (a held picture) or restart (a reconnect).
    private var sequence: Int64 = 0

    /// - Parameter quality: 1 (worst) … 100 (best).
    public init(width: Int, height: Int, quality: Int = 75) throws(FFmpegError) {
        self.width = width
        self.height = height
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else {
            throw FFmpegError(code: FFmpegError.posix(ENOENT), operation: "avcodec_find_encoder(mjpeg)")
        }
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        // Every stored property is set from here on: if a step throws, deinit frees what exists.
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3") }
        context = ctx
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        ctx.pointee.time_base = av_make_q(1, 30)
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        // Map 1…100 onto FFmpeg's qscale 31…2 (lower is better).
        let q = max(2, min(31, 31 - (max(1, min(100, quality)) * 29) / 100))
        ctx.pointee.global_quality = Int32(q) * FF_QP2LAMBDA
        try ffcheck(avcodec_open2(ctx, codec, nil), "avcodec_open2(mjpeg)")
    }

    deinit {
        if context != nil { avcodec_free_context(&context) }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// One JPEG image.
    public func encode(_ frame: Frame) throws(FFmpegError) -> [UInt8] {
        guard let ctx = context else { return [] }
        // The frame may be shared with other outputs (Scaler hands a yuvj420p picture of the
        // right size through unchanged): the encoder's per-picture fields go on a reference of
        // our own (av_frame_ref shares the pixel buffers, copies the struct), never on it.
        guard let own = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
        defer { var o: UnsafeMutablePointer<AVFrame>? = own; av_frame_free(&o) }
        try ffcheck(frame.withUnsafeAVFrame { av_frame_ref(own, $0) }, "av_frame_ref")
        own.pointee.quality = ctx.pointee.global_quality
        own.pointee.pts = sequence
        sequence += 1
        own.pointee.pict_type = AV_PICTURE_TYPE_I
        try ffcheck(avcodec_send_frame(ctx, own), "avcodec_send_frame(mjpeg)")
        try ffcheck(avcodec_receive_packet(ctx, scratch), "avcodec_receive_packet(mjpeg)")
        defer { av_packet_unref(scratch) }
        guard let d = scratch.pointee.data else { return [] }
        return Array(UnsafeBufferPointer(start: d, count: Int(scratch.pointee.size)))
    }
}

@available(*, unavailable)
extension JPEGEncoder: Sendable {}
