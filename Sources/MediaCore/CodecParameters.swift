package import CFFmpeg

/// An immutable copy of a stream's codec parameters (`AVCodecParameters`): what a decoder or a
/// muxer needs to set itself up for a stream.
///
/// Safety: filled once in `init` by `avcodec_parameters_copy` and never written again; readers
/// only copy out of it.
public final class CodecParameters: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<AVCodecParameters>

    package init(copying source: UnsafePointer<AVCodecParameters>) throws(FFmpegError) {
        guard let p = avcodec_parameters_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_parameters_alloc") }
        let r = avcodec_parameters_copy(p, source)
        if r < 0 {
            var q: UnsafeMutablePointer<AVCodecParameters>? = p
            avcodec_parameters_free(&q)
            throw FFmpegError(code: r, operation: "avcodec_parameters_copy")
        }
        pointer = p
    }

    package convenience init(fromCodecContext ctx: UnsafePointer<AVCodecContext>) throws(FFmpegError) {
        guard let p = avcodec_parameters_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avcodec_parameters_alloc") }
        defer { var q: UnsafeMutablePointer<AVCodecParameters>? = p; avcodec_parameters_free(&q) }
        try ffcheck(avcodec_parameters_from_context(p, ctx), "avcodec_parameters_from_context")
        try self.init(copying: p)
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = pointer
        avcodec_parameters_free(&p)
    }

    public var mediaType: MediaType { MediaType(pointer.pointee.codec_type) }
    /// Short codec name as FFmpeg spells it (`h264`, `hevc`, `aac`, `pcm_mulaw` …).
    public var codecName: String { String(cString: avcodec_get_name(pointer.pointee.codec_id)) }
    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channels: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    /// Samples per audio frame, when fixed (AAC: 1024); 0 when not known or variable.
    public var frameSize: Int { Int(pointer.pointee.frame_size) }
    public var bitRate: Int64 { pointer.pointee.bit_rate }
    public var hasExtradata: Bool { pointer.pointee.extradata_size > 0 }
    /// The codec's out-of-band setup (H.264: an `avcC` record or Annex B parameter sets).
    public var extradata: [UInt8] {
        guard let p = pointer.pointee.extradata, pointer.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: p, count: Int(pointer.pointee.extradata_size)))
    }
    public var isH264: Bool { pointer.pointee.codec_id == AV_CODEC_ID_H264 }
    public var isHEVC: Bool { pointer.pointee.codec_id == AV_CODEC_ID_HEVC }

    package func withUnsafeAVCodecParameters<R>(_ body: (UnsafePointer<AVCodecParameters>) throws -> R) rethrows -> R {
        try body(pointer)
    }
}

/// One elementary stream of a source, as the demuxer found it.
public struct StreamInfo: Sendable {
    public let index: Int
    public let mediaType: MediaType
    public let codecName: String
    public let timeBase: TimeBase
    /// Average frame rate (video), if the container says.
    public let frameRate: Double?
    public let parameters: CodecParameters

    public init(index: Int, timeBase: TimeBase, frameRate: Double?, parameters: CodecParameters) {
        self.index = index
        self.mediaType = parameters.mediaType
        self.codecName = parameters.codecName
        self.timeBase = timeBase
        self.frameRate = frameRate
        self.parameters = parameters
    }

    public var width: Int { parameters.width }
    public var height: Int { parameters.height }
}
