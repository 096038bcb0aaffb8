internal import CFFmpeg
public import MediaCore
import Foundation
import Wire
import Decode

/// Which H.264 encoder a rendition may use.
public enum EncoderPreference: String, Sendable, Hashable, CaseIterable, Codable {
    /// VAAPI where a render node opens, else NVENC where a CUDA device answers, else libx264.
    case auto
    case vaapi
    case nvenc
    /// libx264 only.
    case software
}

/// The encoder a rendition took, and why it did not take a better one.
public struct EncoderChoice: Sendable, Hashable, Codable {
    /// `vaapi`, `nvenc` or `software`.
    public var path: String
    /// FFmpeg's encoder: `h264_vaapi`, `h264_nvenc`, `libx264`.
    public var encoder: String
    /// Why the hardware paths were not taken (nil when one was).
    public var fallbackReason: String?
}

/// What a rendition is encoded as.
public struct VideoEncoderSettings: Sendable, Hashable {
    public var width: Int
    public var height: Int
    public var bitrateKbps: Int
    /// The frame rate the encoder is told (rate control); the frames' own times are kept.
    public var fps: Double
    public var preference: EncoderPreference = .auto
    /// DRM render node for VAAPI (default: the first `/dev/dri/renderD*`).
    public var devicePath: String?
    /// Encoder threads: libx264's sliced threads (no added frame of delay).
    public var threads = 2

    public init(width: Int, height: Int, bitrateKbps: Int, fps: Double) {
        self.width = width
        self.height = height
        self.bitrateKbps = bitrateKbps
        self.fps = fps
    }
}

/// An H.264 encoder for a rendition, negotiated like the decoder: VAAPI, NVENC, then libx264.
/// Low latency: no B-frames, no lookahead, sliced threads; a keyframe exactly where the caller
/// asks (the source's keyframes), never elsewhere unless the source's GOP runs past 10 s;
/// parameter sets in-band on every keyframe. The frames' timestamps pass through unchanged (the
/// encoder's time base is theirs), so every rendition's keyframes fall at the source's times.
/// Confined to one thread.
public final class VideoEncoder {
    public let settings: VideoEncoderSettings
    public let choice: EncoderChoice
    public let timeBase: TimeBase
    public let parameters: CodecParameters
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var hwFrames: UnsafeMutablePointer<AVBufferRef>?
    private let scratch: UnsafeMutablePointer<AVPacket>
    private let scaler = Scaler()
    /// The pixel format frames are scaled to before encoding (NV12 for VAAPI's upload).
    private let softwareFormat: PixelFormat

    /// - Parameter timeBase: the time base of the frames that will be encoded.
    public init(settings: VideoEncoderSettings, timeBase: TimeBase) throws(FFmpegError) {
        self.settings = settings
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        var reasons: [String] = []
        var opened: (UnsafeMutablePointer<AVCodecContext>, String, String, UnsafeMutablePointer<AVBufferRef>?)?
        let wantsVAAPI = settings.preference == .auto || settings.preference == .vaapi
        let wantsNVENC = settings.preference == .auto || settings.preference == .nvenc
        if wantsVAAPI {
            switch Self.openVAAPI(settings, timeBase: timeBase) {
            case .success(let (ctx, frames)): opened = (ctx, "vaapi", "h264_vaapi", frames)
            case .failure(let why): reasons.append("VAAPI: \(why)")
            }
        }
        if opened == nil && wantsNVENC {
            switch Self.openNVENC(settings, timeBase: timeBase) {
            case .success(let ctx): opened = (ctx, "nvenc", "h264_nvenc", nil)
            case .failure(let why): reasons.append("NVENC: \(why)")
            }
        }
        if settings.preference == .software { reasons.append("software asked for") }
        if opened == nil {
            switch Self.openX264(settings, timeBase: timeBase) {
            case .success(let ctx): opened = (ctx, "software", "libx264", nil)
            case .failure(let e):
                var p: UnsafeMutablePointer<AVPacket>? = pkt; av_packet_free(&p)
                throw e
            }
        }
        let (ctx, path, name, frames) = opened!
        context = ctx
        hwFrames = frames
        softwareFormat = path == "vaapi" ? .nv12 : .yuv420p
        choice = EncoderChoice(path: path, encoder: name, fallbackReason: path == "software" ? reasons.joined(separator: "; ") : nil)
        self.timeBase = TimeBase(ctx.pointee.time_base)
        do {
            parameters = try CodecParameters(fromCodecContext: ctx)
        } catch {
            avcodec_free_context(&context)
            if hwFrames != nil { av_buffer_unref(&hwFrames) }
            var p: UnsafeMutablePointer<AVPacket>? = pkt; av_packet_free(&p)
            throw error
        }
    }

    deinit {
        if context != nil { avcodec_free_context(&context) }
        if hwFrames != nil { av_buffer_unref(&hwFrames) }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// The settings every path shares: size, rate, time base, GOP, no B-frames, global header.
    private static func common(_ ctx: UnsafeMutablePointer<AVCodecContext>, _ s: VideoEncoderSettings, _ timeBase: TimeBase) {
        ctx.pointee.width = Int32(s.width)
        ctx.pointee.height = Int32(s.height)
        ctx.pointee.time_base = timeBase.rational
        let fps = max(1, min(240, s.fps))
        ctx.pointee.framerate = av_d2q(fps, 1000)
        // Keyframes come where the source has them (forced); this is only a backstop.
        ctx.pointee.gop_size = Int32(clamping: Int(saturating: (fps * 10).rounded()))
        ctx.pointee.keyint_min = 1
        ctx.pointee.max_b_frames = 0
        ctx.pointee.bit_rate = Int64(s.bitrateKbps) * 1000
        ctx.pointee.rc_max_rate = Int64(s.bitrateKbps) * 1500
        ctx.pointee.rc_buffer_size = Int32(clamping: s.bitrateKbps * 1000)
        ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
    }

    private static func openX264(_ s: VideoEncoderSettings, timeBase: TimeBase) -> Result<UnsafeMutablePointer<AVCodecContext>, FFmpegError> {
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            return .failure(FFmpegError(code: FFmpegError.posix(ENOENT), operation: "avcodec_find_encoder_by_name(libx264)"))
        }
        guard let ctx = avcodec_alloc_context3(codec) else { return .failure(FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_alloc_context3")) }
        common(ctx, s, timeBase)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.thread_count = Int32(s.threads)
        var opts: OpaquePointer? = nil
        defer { av_dict_free(&opts) }
        av_dict_set(&opts, "preset", "veryfast", 0)
        // zerolatency: no lookahead, no B-frames, sliced threads. An I picture the caller asks
        // for is an IDR (forced-idr); parameter sets ride on every keyframe.
        av_dict_set(&opts, "tune", "zerolatency", 0)
        av_dict_set(&opts, "forced-idr", "1", 0)
        av_dict_set(&opts, "x264-params", "repeat-headers=1:scenecut=0:sliced-threads=1", 0)
        let r = avcodec_open2(ctx, codec, &opts)
        if r < 0 {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            return .failure(FFmpegError(code: r, operation: "avcodec_open2(libx264)"))
        }
        return .success(ctx)
    }

    private static func openNVENC(_ s: VideoEncoderSettings, timeBase: TimeBase) -> Result<UnsafeMutablePointer<AVCodecContext>, Refusal> {
        guard let codec = avcodec_find_encoder_by_name("h264_nvenc") else { return .failure("this FFmpeg has no h264_nvenc") }
        var device: UnsafeMutablePointer<AVBufferRef>?
        let d = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_CUDA, nil, nil, 0)
        guard d >= 0 else { return .failure("no CUDA device answers (\(FFmpegError(code: d, operation: "av_hwdevice_ctx_create(cuda)")))") }
        av_buffer_unref(&device)
        guard let ctx = avcodec_alloc_context3(codec) else { return .failure("out of memory") }
        common(ctx, s, timeBase)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        var opts: OpaquePointer? = nil
        defer { av_dict_free(&opts) }
        av_dict_set(&opts, "preset", "p1", 0)
        av_dict_set(&opts, "tune", "ull", 0)
        av_dict_set(&opts, "forced-idr", "1", 0)
        av_dict_set(&opts, "zerolatency", "1", 0)
        let r = avcodec_open2(ctx, codec, &opts)
        if r < 0 {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            return .failure("h264_nvenc does not open (\(FFmpegError(code: r, operation: "avcodec_open2(h264_nvenc)")))")
        }
        return .success(ctx)
    }

    private static func openVAAPI(_ s: VideoEncoderSettings, timeBase: TimeBase)
        -> Result<(UnsafeMutablePointer<AVCodecContext>, UnsafeMutablePointer<AVBufferRef>), Refusal> {
        guard let codec = avcodec_find_encoder_by_name("h264_vaapi") else { return .failure("this FFmpeg has no h264_vaapi") }
        let node: String
        if let p = s.devicePath {
            node = p
        } else {
            let nodes = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []).filter { $0.hasPrefix("renderD") }.sorted()
            guard let first = nodes.first else { return .failure("no render node (/dev/dri/renderD*)") }
            node = "/dev/dri/" + first
        }
        var device: UnsafeMutablePointer<AVBufferRef>?
        let d = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_VAAPI, node, nil, 0)
        guard d >= 0, let dev = device else { return .failure("\(node) does not open (\(FFmpegError(code: d, operation: "av_hwdevice_ctx_create(vaapi)")))") }
        defer { av_buffer_unref(&device) }
        guard let frames = av_hwframe_ctx_alloc(dev) else { return .failure("out of memory") }
        let fc = UnsafeMutableRawPointer(frames.pointee.data).assumingMemoryBound(to: AVHWFramesContext.self)
        fc.pointee.format = AV_PIX_FMT_VAAPI
        fc.pointee.sw_format = AV_PIX_FMT_NV12
        fc.pointee.width = Int32(s.width)
        fc.pointee.height = Int32(s.height)
        fc.pointee.initial_pool_size = 16
        let fi = av_hwframe_ctx_init(frames)
        guard fi >= 0 else {
            var f: UnsafeMutablePointer<AVBufferRef>? = frames
            av_buffer_unref(&f)
            return .failure("\(node): no NV12 surfaces of \(s.width)x\(s.height) (\(FFmpegError(code: fi, operation: "av_hwframe_ctx_init")))")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            var f: UnsafeMutablePointer<AVBufferRef>? = frames
            av_buffer_unref(&f)
            return .failure("out of memory")
        }
        common(ctx, s, timeBase)
        ctx.pointee.pix_fmt = AV_PIX_FMT_VAAPI
        ctx.pointee.hw_frames_ctx = av_buffer_ref(frames)
        var opts: OpaquePointer? = nil
        defer { av_dict_free(&opts) }
        av_dict_set(&opts, "async_depth", "1", 0)
        let r = avcodec_open2(ctx, codec, &opts)
        if r < 0 {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            var f: UnsafeMutablePointer<AVBufferRef>? = frames
            av_buffer_unref(&f)
            return .failure("h264_vaapi does not open on \(node) (\(FFmpegError(code: r, operation: "avcodec_open2(h264_vaapi)")))")
        }
        return .success((ctx, frames))
    }

    /// Scales `frame` to the rendition's size and encodes it, a keyframe (IDR with parameter
    /// sets) when `keyframe`; returns the packets that came out (none or one: no B-frames).
    /// Its timestamps stay the frame's.
    public func encode(_ frame: Frame, keyframe: Bool) throws(FFmpegError) -> [Packet] {
        guard let ctx = context else { return [] }
        let picture = try scaler.convert(frame, to: softwareFormat, width: settings.width, height: settings.height)
        let arrival = frame.arrivalNanos
        let r: Int32
        if let hw = hwFrames {
            guard let up = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
            defer { var u: UnsafeMutablePointer<AVFrame>? = up; av_frame_free(&u) }
            try ffcheck(av_hwframe_get_buffer(hw, up, 0), "av_hwframe_get_buffer")
            try ffcheck(picture.withUnsafeAVFrame { av_hwframe_transfer_data(up, $0, 0) }, "av_hwframe_transfer_data")
            up.pointee.pts = frame.pts ?? 0
            up.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
            r = avcodec_send_frame(ctx, up)
        } else {
            // The scaler may hand back the frame itself (same size and format): mark a copy.
            let own = picture === frame ? try Frame(referencing: frame) : picture
            r = own.withUnsafeMutableAVFrame { f in
                f.pointee.pts = frame.pts ?? 0
                f.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
                return avcodec_send_frame(ctx, f)
            }
        }
        try ffcheck(r, "avcodec_send_frame(\(choice.encoder))")
        var out: [Packet] = []
        while true {
            let rr = avcodec_receive_packet(ctx, scratch)
            if rr == FFmpegError.tryAgain || rr == FFmpegError.endOfFile { break }
            try ffcheck(rr, "avcodec_receive_packet(\(choice.encoder))")
            scratch.pointee.stream_index = 0
            out.append(try Packet(movingFrom: scratch, timeBase: timeBase, mediaType: .video, arrivalNanos: arrival))
        }
        return out
    }
}

@available(*, unavailable)
extension VideoEncoder: Sendable {}

/// Why an encoder path was not taken, in words.
struct Refusal: Error, CustomStringConvertible, ExpressibleByStringInterpolation {
    let description: String
    init(stringLiteral value: String) { description = value }
    init(stringInterpolation: DefaultStringInterpolation) { description = String(stringInterpolation: stringInterpolation) }
}
