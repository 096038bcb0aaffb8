internal import CFFmpeg
public import MediaCore
public import Logging
import Foundation
import Synchronization

/// What `receive()` gives back.
public enum ReceiveResult {
    case frame(Frame)
    /// The decoder wants more packets.
    case needsInput
    case endOfStream
}

/// Counts of what went wrong while decoding; never fatal.
public struct DecodeCounters: Sendable, Hashable, Codable {
    /// Packets the decoder rejected as invalid.
    public var corruptPackets = 0
    /// Frames FFmpeg flagged as decoded from damaged data.
    public var corruptFrames = 0
    /// Packets skipped while waiting for a keyframe after an error.
    public var skippedUntilKeyframe = 0
    /// Frames dropped because `dropCorrupt` is set.
    public var droppedCorruptFrames = 0
    public var framesDecoded = 0
    /// Errors the decoder logged (damaged input it met, concealed or not).
    public var errorsLogged = 0
    /// Frames decoded from damaged media (lost packets since the last clean keyframe, or
    /// errors logged): they may look smeared even when FFmpeg flags nothing.
    public var damagedFrames = 0
    public init() {}
}

/// Per-decoder state that the `get_format` callback reads and writes.
///
/// Safety: set up before the codec opens; afterwards touched only from the decoding thread
/// (get_format runs inside avcodec_send_packet/receive_frame on that thread — slice threading
/// does not move it). Lives exactly as long as the codec context that points to it.
final class FormatNegotiation: @unchecked Sendable {
    let hardwareFormat: AVPixelFormat?
    var chosenHardware = false
    var rejection: String?

    init(hardwareFormat: AVPixelFormat?) { self.hardwareFormat = hardwareFormat }

    /// Mirrors fftools' choice: the hardware format when offered and a device is ready,
    /// otherwise the first software format in the list.
    func choose(_ formats: UnsafePointer<AVPixelFormat>) -> AVPixelFormat {
        var p = formats
        var firstSoftware: AVPixelFormat?
        var offeredHardware = false
        while p.pointee != AV_PIX_FMT_NONE {
            let f = p.pointee
            if let hw = hardwareFormat, f == hw {
                offeredHardware = true
            } else if firstSoftware == nil, let d = av_pix_fmt_desc_get(f), d.pointee.flags & UInt64(AV_PIX_FMT_FLAG_HWACCEL) == 0 {
                firstSoftware = f
            }
            p += 1
        }
        if let hw = hardwareFormat, offeredHardware {
            chosenHardware = true
            return hw
        }
        if hardwareFormat != nil {
            rejection = "vaapi: the decoder did not offer a VAAPI surface format for this stream"
        }
        chosenHardware = false
        return firstSoftware ?? AV_PIX_FMT_NONE
    }
}

/// A video decoder (H.264, H.265 and whatever else libavcodec has) with hardware negotiation.
///
/// Confined to one thread. It says which path it took (`path`) and, when hardware was wanted but
/// not used, why (`fallbackReason`).
/// What a stream's decode stage needs of a decoder: pictures for packets, the path it took and
/// why, and its counters. `VideoDecoder` (libavcodec) is the one the product uses; the seam lets
/// a stage be given another (the suite's shows what a decoder that cannot keep up costs).
public protocol PictureDecoder: AnyObject {
    var path: DecoderPath { get }
    var fallbackReason: String? { get }
    var counters: DecodeCounters { get }
    func decode(_ packet: Packet) -> [Frame]
}

public final class VideoDecoder: PictureDecoder {
    public let codecName: String
    public let options: DecoderOptions
    public private(set) var counters = DecodeCounters()
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let negotiation: FormatNegotiation
    private var hardwareDevice: UnsafeMutablePointer<AVBufferRef>?
    private let scratch: UnsafeMutablePointer<AVFrame>
    private let timeBase: TimeBase
    private var awaitingKeyframe = false
    private var lastArrival: UInt64 = 0
    /// Media was lost, or the decoder logged errors, since the last clean keyframe.
    private var damagedUntilKeyframe = false
    private var errorWatch: FFmpegLog.ErrorWatch?
    private let setupFallback: String?
    private let logger: Logger

    /// Opens a decoder for a stream found by the demuxer.
    public init(stream: StreamInfo, options: DecoderOptions = DecoderOptions(), logger: Logger = Logger(label: "liverelay.decode")) throws(DecodeError) {
        self.codecName = stream.codecName
        self.options = options
        self.timeBase = stream.timeBase
        self.logger = logger
        guard let frame = av_frame_alloc() else { throw DecodeError(codec: stream.codecName, detail: "out of memory") }
        scratch = frame
        let codecID = stream.parameters.withUnsafeAVCodecParameters { $0.pointee.codec_id }
        guard let codec = avcodec_find_decoder(codecID) else {
            var f: UnsafeMutablePointer<AVFrame>? = frame; av_frame_free(&f)
            throw DecodeError(codec: stream.codecName, detail: "no decoder in this FFmpeg build")
        }

        // Hardware: a device first, then get_format picks its surfaces if the codec offers them.
        var fallback: String? = nil
        var device: UnsafeMutablePointer<AVBufferRef>? = nil
        if options.hardware != .none {
            switch VideoDecoder.openVAAPI(codec: codec, devicePath: options.devicePath) {
            case .success(let d): device = d
            case .failure(let reason): fallback = reason.text
            }
        }
        negotiation = FormatNegotiation(hardwareFormat: device != nil ? AV_PIX_FMT_VAAPI : nil)
        hardwareDevice = device
        setupFallback = fallback

        // Every stored property is set from here on: if a step throws, deinit frees what exists.
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw DecodeError(codec: stream.codecName, detail: "out of memory")
        }
        context = ctx
        errorWatch = FFmpegLog.ErrorWatch(context: UnsafeMutableRawPointer(ctx))
        let r = stream.parameters.withUnsafeAVCodecParameters { avcodec_parameters_to_context(ctx, $0) }
        if r < 0 { throw DecodeError(codec: codecName, detail: FFmpegError.describe(r), underlying: FFmpegError(code: r, operation: "avcodec_parameters_to_context")) }
        ctx.pointee.pkt_timebase = stream.timeBase.rational
        // Slice threads only: frame threads hold threads−1 frames back.
        ctx.pointee.thread_type = FF_THREAD_SLICE
        ctx.pointee.thread_count = Int32(options.sliceThreads)
        if options.lowDelay { ctx.pointee.flags |= AV_CODEC_FLAG_LOW_DELAY }
        if let device {
            ctx.pointee.hw_device_ctx = av_buffer_ref(device)
            ctx.pointee.extra_hw_frames = Int32(options.extraHardwareFrames)
        }
        // Safety: `negotiation` is retained by self, which frees the context in deinit.
        ctx.pointee.opaque = Unmanaged.passUnretained(negotiation).toOpaque()
        ctx.pointee.get_format = { ctx, formats in
            guard let ctx, let formats, let opaque = ctx.pointee.opaque else { return AV_PIX_FMT_NONE }
            return Unmanaged<FormatNegotiation>.fromOpaque(opaque).takeUnretainedValue().choose(formats)
        }
        let o = avcodec_open2(ctx, codec, nil)
        if o < 0 {
            throw DecodeError(codec: codecName, detail: FFmpegError.describe(o), underlying: FFmpegError(code: o, operation: "avcodec_open2"))
        }
        logger.debug("decoder open", metadata: ["codec": "\(codecName)", "path": "\(path.rawValue)", "fallback": "\(fallbackReason ?? "-")"])
    }

    deinit {
        errorWatch = nil // before the context's address can be reused
        if context != nil { avcodec_free_context(&context) }
        if hardwareDevice != nil { av_buffer_unref(&hardwareDevice) }
        var f: UnsafeMutablePointer<AVFrame>? = scratch
        av_frame_free(&f)
    }

    /// The path in use: `vaapi` once the decoder has chosen VAAPI surfaces (or will, when a
    /// device is open and no frame has been negotiated yet), else `software`.
    public var path: DecoderPath {
        if negotiation.rejection != nil { return .software }
        return hardwareDevice != nil ? .vaapi : .software
    }

    /// Why hardware was not used, when it was asked for (`auto` or `vaapi`); nil otherwise.
    public var fallbackReason: String? {
        if options.hardware == .none { return nil }
        return setupFallback ?? negotiation.rejection
    }

    private static func openVAAPI(codec: UnsafePointer<AVCodec>, devicePath: String?) -> Result<UnsafeMutablePointer<AVBufferRef>, Reason> {
        var supports = false
        var i: Int32 = 0
        while let config = avcodec_get_hw_config(codec, i) {
            if config.pointee.device_type == AV_HWDEVICE_TYPE_VAAPI && Int(config.pointee.methods) & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX != 0 {
                supports = true
            }
            i += 1
        }
        guard supports else { return .failure(Reason("vaapi: \(String(cString: codec.pointee.name)) has no VAAPI support in this FFmpeg build")) }
        let node: String
        if let devicePath {
            guard FileManager.default.fileExists(atPath: devicePath) else { return .failure(Reason("vaapi: \(devicePath) does not exist")) }
            node = devicePath
        } else {
            let nodes = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []).filter { $0.hasPrefix("renderD") }.sorted()
            guard let first = nodes.first else { return .failure(Reason("vaapi: no /dev/dri render node")) }
            node = "/dev/dri/" + first
        }
        var device: UnsafeMutablePointer<AVBufferRef>? = nil
        let r = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_VAAPI, node, nil, 0)
        guard r >= 0, let device else { return .failure(Reason("vaapi: cannot open \(node): \(FFmpegError.describe(r))")) }
        return .success(device)
    }

    struct Reason: Error { let text: String; init(_ t: String) { text = t } }

    /// Sends a packet and returns every frame that became ready. Invalid data is counted and
    /// skipped, and the decoder then waits for the next keyframe; bad input never throws.
    public func decode(_ packet: Packet) -> [Frame] {
        guard let ctx = context else { return [] }
        if awaitingKeyframe {
            if !packet.isKeyframe { counters.skippedUntilKeyframe += 1; return [] }
            awaitingKeyframe = false
        }
        lastArrival = packet.arrivalNanos
        if packet.isDamaged { damagedUntilKeyframe = true } else if packet.isKeyframe { damagedUntilKeyframe = false }
        var out: [Frame] = []
        while true {
            let r = packet.withUnsafeAVPacket { avcodec_send_packet(ctx, $0) }
            if r == FFmpegError.tryAgain {
                // The decoder holds output: take it, then the packet goes in.
                let ready = drain()
                if ready.isEmpty { break }
                out += ready
                continue
            }
            if r < 0 && r != FFmpegError.endOfFile {
                counters.corruptPackets += 1
                awaitingKeyframe = !packet.isKeyframe
            }
            break
        }
        out += drain()
        // Errors logged while this packet was decoded damage its pictures and what follows.
        if let errors = errorWatch?.take(), errors > 0 {
            counters.errorsLogged += errors
            damagedUntilKeyframe = true
        }
        for f in out where damagedUntilKeyframe || f.isCorrupt {
            f.isDamaged = true
            counters.damagedFrames += 1
        }
        return out
    }

    /// Signals the end of input; `receive()` then drains the frames still held.
    public func sendEndOfStream() {
        guard let ctx = context else { return }
        avcodec_send_packet(ctx, nil)
    }

    /// The next decoded frame, if one is ready.
    public func receive() -> ReceiveResult {
        guard let ctx = context else { return .endOfStream }
        while true {
            let r = avcodec_receive_frame(ctx, scratch)
            if r == FFmpegError.tryAgain { return .needsInput }
            if r == FFmpegError.endOfFile { return .endOfStream }
            if r < 0 {
                counters.corruptPackets += 1
                return .needsInput
            }
            let corrupt = scratch.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || scratch.pointee.decode_error_flags != 0
            if corrupt {
                counters.corruptFrames += 1
                if options.dropCorrupt {
                    counters.droppedCorruptFrames += 1
                    av_frame_unref(scratch)
                    continue
                }
            }
            counters.framesDecoded += 1
            do {
                return .frame(try Frame(movingFrom: scratch, timeBase: timeBase, arrivalNanos: lastArrival, decodedNanos: MonotonicClock.nanoseconds()))
            } catch {
                av_frame_unref(scratch)
                return .needsInput
            }
        }
    }

    /// Returns every frame ready now.
    public func drain() -> [Frame] {
        var out: [Frame] = []
        while case .frame(let f) = receive() { out.append(f) }
        return out
    }
}

@available(*, unavailable)
extension VideoDecoder: Sendable {}
