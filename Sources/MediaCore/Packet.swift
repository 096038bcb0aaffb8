package import CFFmpeg

/// One compressed packet as it left the demuxer, shared read-only by every sink.
///
/// Safety: the wrapped `AVPacket` is filled once (by `av_packet_move_ref` from the read loop's
/// scratch packet) before the `Packet` is published and is never written again; FFmpeg's
/// reference-counted buffers make concurrent reads of the payload safe. A sink that must change
/// a packet works on `copy()`.
public final class Packet: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<AVPacket>

    /// Time base of `pts`, `dts` and `duration`.
    public let timeBase: TimeBase
    /// Monotonic nanoseconds when the packet arrived from the source (see `MonotonicClock`).
    /// Set by the source before the packet is handed on, never after.
    public package(set) var arrivalNanos: UInt64
    /// What kind of elementary stream the packet belongs to.
    public let mediaType: MediaType
    /// The sender's wall-clock time of this packet's presentation, in microseconds since the
    /// Unix epoch, where the source says it (RTSP: RTCP sender reports); nil otherwise.
    public package(set) var senderWallMicros: Int64?
    /// Media was lost at or before this packet since the last clean keyframe (video): what the
    /// decoder makes of it until the next keyframe is damaged. Set by the source.
    public package(set) var isDamaged = false
    /// RTP packets the source reported lost while this packet was read.
    public package(set) var lostBefore = 0

    /// Takes ownership of the references in `scratch`, leaving it blank for the next read.
    package init(movingFrom scratch: UnsafeMutablePointer<AVPacket>, timeBase: TimeBase, mediaType: MediaType, arrivalNanos: UInt64) throws(FFmpegError) {
        guard let p = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        av_packet_move_ref(p, scratch)
        self.pointer = p
        self.timeBase = timeBase
        self.mediaType = mediaType
        self.arrivalNanos = arrivalNanos
    }

    /// A packet re-timed: the same payload (shared), other timestamps. For tests that feed
    /// the timeline what the wild sends (jumps, wraps, values near the Int64 limits).
    package func retimed(pts: Int64?, dts: Int64?, duration: Int64, arrivalNanos: UInt64) throws(FFmpegError) -> Packet {
        guard let scratch = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        defer { var s: UnsafeMutablePointer<AVPacket>? = scratch; av_packet_free(&s) }
        try ffcheck(av_packet_ref(scratch, pointer), "av_packet_ref")
        scratch.pointee.pts = pts ?? noTimestamp
        scratch.pointee.dts = dts ?? noTimestamp
        scratch.pointee.duration = duration
        return try Packet(movingFrom: scratch, timeBase: timeBase, mediaType: mediaType, arrivalNanos: arrivalNanos)
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }
    public var pts: Int64? { optionalTimestamp(pointer.pointee.pts) }
    public var dts: Int64? { optionalTimestamp(pointer.pointee.dts) }
    public var duration: Int64 { pointer.pointee.duration }
    public var size: Int { Int(pointer.pointee.size) }
    public var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }

    /// The payload bytes (a copy).
    public var data: [UInt8] {
        guard let d = pointer.pointee.data, pointer.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: d, count: Int(pointer.pointee.size)))
    }

    /// A new reference to the same payload, with its own writable properties.
    public func copy(streamIndex: Int? = nil) throws(FFmpegError) -> Packet {
        guard let tmp = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        defer { var t: UnsafeMutablePointer<AVPacket>? = tmp; av_packet_free(&t) }
        try ffcheck(av_packet_ref(tmp, pointer), "av_packet_ref")
        if let streamIndex { tmp.pointee.stream_index = Int32(streamIndex) }
        return try Packet(movingFrom: tmp, timeBase: timeBase, mediaType: mediaType, arrivalNanos: arrivalNanos)
    }

    /// Read-only access for the modules that talk to libav*. The pointer must not escape.
    package func withUnsafeAVPacket<R>(_ body: (UnsafePointer<AVPacket>) throws -> R) rethrows -> R {
        try body(pointer)
    }
}

/// What an elementary stream carries.
public enum MediaType: String, Sendable, Hashable, Codable {
    case video, audio, data, subtitle, other

    package init(_ t: AVMediaType) {
        switch t {
        case AVMEDIA_TYPE_VIDEO: self = .video
        case AVMEDIA_TYPE_AUDIO: self = .audio
        case AVMEDIA_TYPE_DATA: self = .data
        case AVMEDIA_TYPE_SUBTITLE: self = .subtitle
        default: self = .other
        }
    }
}
