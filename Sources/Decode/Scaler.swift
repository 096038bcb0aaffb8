internal import CFFmpeg
public import MediaCore

/// Converts frames to the pixel format and size a consumer asks for (libswscale), reusing its
/// context while input and output stay the same. Hardware frames are downloaded first.
///
/// Confined to one thread.
public final class Scaler {
    private var context: OpaquePointer?
    public let flags: Int32

    /// - Parameter fast: bilinear (cheap, for previews) rather than bicubic.
    public init(fast: Bool = true) {
        flags = fast ? Int32(SWS_BILINEAR) : Int32(SWS_BICUBIC)
    }

    deinit { sws_freeContext(context) }

    /// A new frame of `format` at `width`×`height` (nil: the source's size), carrying the source
    /// frame's timestamps. Returns the frame itself when nothing needs converting.
    public func convert(_ frame: Frame, to format: PixelFormat, width: Int? = nil, height: Int? = nil) throws(FFmpegError) -> Frame {
        let source = frame.pixelFormat.isHardware ? try Scaler.download(frame) : frame
        let w = width ?? source.width, h = height ?? source.height
        if source.pixelFormat == format && w == source.width && h == source.height { return source }
        let out = try Frame(width: w, height: h, format: format, pts: source.pts ?? 0, timeBase: source.timeBase,
                            arrivalNanos: source.arrivalNanos, decodedNanos: source.decodedNanos)
        context = sws_getCachedContext(context, Int32(source.width), Int32(source.height), source.pixelFormat.av,
                                       Int32(w), Int32(h), format.av, flags, nil, nil, nil)
        guard let ctx = context else {
            throw FFmpegError(code: FFmpegError.posix(EINVAL), operation: "sws_getCachedContext(\(source.pixelFormat)→\(format))")
        }
        let r = out.withUnsafeMutableAVFrame { dst in source.withUnsafeAVFrame { src in sws_scale_frame(ctx, dst, src) } }
        try ffcheck(r, "sws_scale_frame")
        return out
    }

    /// Copies a hardware frame's pixels to CPU memory (`av_hwframe_transfer_data`).
    public static func download(_ frame: Frame) throws(FFmpegError) -> Frame {
        guard let tmp = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
        defer { var t: UnsafeMutablePointer<AVFrame>? = tmp; av_frame_free(&t) }
        let r = frame.withUnsafeAVFrame { src -> Int32 in
            let t = av_hwframe_transfer_data(tmp, src, 0)
            if t >= 0 { av_frame_copy_props(tmp, src) }
            return t
        }
        try ffcheck(r, "av_hwframe_transfer_data")
        return try Frame(movingFrom: tmp, timeBase: frame.timeBase, arrivalNanos: frame.arrivalNanos, decodedNanos: frame.decodedNanos)
    }
}

@available(*, unavailable)
extension Scaler: Sendable {}
