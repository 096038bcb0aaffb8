package import CFFmpeg

/// One decoded (or generated) picture, shared read-only by every frame sink once published.
///
/// Safety: the `AVFrame` is filled before publication (decoder output moved in with
/// `av_frame_move_ref`, or pixels drawn by the test source before it is handed on) and only read
/// afterwards; its buffers are reference-counted by FFmpeg.
public final class Frame: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<AVFrame>
    /// Time base of `pts`.
    public let timeBase: TimeBase
    /// Monotonic nanoseconds when the packet that completed this frame arrived.
    public let arrivalNanos: UInt64
    /// Monotonic nanoseconds when decoding finished (equals creation time for generated frames).
    public let decodedNanos: UInt64
    /// Decoded from damaged media: lost packets since the last clean keyframe, or a decoder
    /// that reported errors (concealed, smeared). Set by the decoder before publication.
    public package(set) var isDamaged = false

    package init(movingFrom scratch: UnsafeMutablePointer<AVFrame>, timeBase: TimeBase, arrivalNanos: UInt64, decodedNanos: UInt64) throws(FFmpegError) {
        guard let f = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
        av_frame_move_ref(f, scratch)
        pointer = f
        self.timeBase = timeBase
        self.arrivalNanos = arrivalNanos
        self.decodedNanos = decodedNanos
    }

    /// A new frame referencing `other`'s buffers (no pixels copied), its own properties to set
    /// before it is handed on (an encoder's picture type).
    package init(referencing other: Frame) throws(FFmpegError) {
        guard let f = av_frame_clone(other.pointer) else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_clone") }
        pointer = f
        timeBase = other.timeBase
        arrivalNanos = other.arrivalNanos
        decodedNanos = other.decodedNanos
        isDamaged = other.isDamaged
    }

    /// A new blank picture with its own buffers.
    public init(width: Int, height: Int, format: PixelFormat, pts: Int64 = 0, timeBase: TimeBase = .milliseconds,
                arrivalNanos: UInt64? = nil, decodedNanos: UInt64? = nil) throws(FFmpegError) {
        guard let f = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = format.av.rawValue
        f.pointee.pts = pts
        let r = av_frame_get_buffer(f, 0)
        if r < 0 {
            var q: UnsafeMutablePointer<AVFrame>? = f
            av_frame_free(&q)
            throw FFmpegError(code: r, operation: "av_frame_get_buffer")
        }
        pointer = f
        self.timeBase = timeBase
        let now = MonotonicClock.nanoseconds()
        self.arrivalNanos = arrivalNanos ?? now
        self.decodedNanos = decodedNanos ?? now
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&f)
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var pixelFormat: PixelFormat { PixelFormat(raw: pointer.pointee.format) }
    public var pts: Int64? { optionalTimestamp(pointer.pointee.best_effort_timestamp != noTimestamp ? pointer.pointee.best_effort_timestamp : pointer.pointee.pts) }
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }
    /// FFmpeg flagged the picture as decoded from damaged data.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0 }
    /// Picture type letter (I, P, B …).
    public var pictureType: Character { Character(Unicode.Scalar(UInt8(bitPattern: av_get_picture_type_char(pointer.pointee.pict_type)))) }

    /// Reads plane 0 (luma for YUV, packed pixels for RGB).
    public func withLumaPlane<R>(_ body: (_ base: UnsafePointer<UInt8>, _ stride: Int) throws -> R) rethrows -> R? {
        guard pixelFormat.hasLumaPlane, let base = pointer.pointee.data.0 else { return nil }
        return try body(UnsafePointer(base), Int(pointer.pointee.linesize.0))
    }

    /// Packed bytes of one plane, row by row without padding (for tests and encoders of our own).
    public func planeBytes(_ plane: Int, rowBytes: Int, rows: Int) -> [UInt8] {
        withUnsafeAVFrame { f in
            let (data, stride) = Frame.plane(f, plane)
            guard let data else { return [] }
            var out = [UInt8](); out.reserveCapacity(rowBytes * rows)
            for y in 0..<rows { out.append(contentsOf: UnsafeBufferPointer(start: data + y * stride, count: rowBytes)) }
            return out
        }
    }

    package static func plane(_ f: UnsafePointer<AVFrame>, _ i: Int) -> (UnsafeMutablePointer<UInt8>?, Int) {
        switch i {
        case 0: (f.pointee.data.0, Int(f.pointee.linesize.0))
        case 1: (f.pointee.data.1, Int(f.pointee.linesize.1))
        case 2: (f.pointee.data.2, Int(f.pointee.linesize.2))
        default: (f.pointee.data.3, Int(f.pointee.linesize.3))
        }
    }

    package func withUnsafeAVFrame<R>(_ body: (UnsafePointer<AVFrame>) throws -> R) rethrows -> R { try body(pointer) }

    /// Write access, only before the frame is published (the test source draws into it).
    package func withUnsafeMutableAVFrame<R>(_ body: (UnsafeMutablePointer<AVFrame>) throws -> R) rethrows -> R {
        try body(pointer)
    }
}
