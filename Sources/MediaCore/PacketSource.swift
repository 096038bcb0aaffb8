/// Anything that yields packets of a live (or file) stream on the calling thread: an FFmpeg
/// input, or the built-in test source.
///
/// A source is confined to one thread (the ingest thread); only `interrupt()` may be called from
/// another, and it makes a blocked `readPacket()` return promptly.
public protocol PacketSource: AnyObject {
    /// The streams found when the source opened.
    var streams: [StreamInfo] { get }
    /// Container or source kind (`rtsp`, `flv`, `mpegts`, `testsrc` …).
    var formatName: String { get }
    /// The next packet, or nil at the end of the stream. Throws on failure or timeout.
    func readPacket() throws -> Packet?
    /// A handle another thread may use to stop a blocked read.
    var interruptHandle: InterruptHandle { get }
}

extension PacketSource {
    /// The first video stream, if any.
    public var videoStream: StreamInfo? { streams.first { $0.mediaType == .video } }
}

/// A source that can be asked for a keyframe now (a WebRTC publisher, through RTCP PLI): a new
/// viewer starts at once, an HLS segment ends on time. Callable from any thread.
public protocol KeyframeRequesting: AnyObject, Sendable {
    func requestKeyframe()
}

/// A source that can hand its packets on from the thread that produces them (a publisher's
/// session on an event loop), so that the ingest thread does not wake for each packet.
public protocol PushingPacketSource: PacketSource {
    /// Hands every packet on through `deliver` until the source ends (returns) or fails
    /// (throws, as `readPacket` would). Called on the ingest thread, which waits meanwhile;
    /// `deliver` runs on one thread at a time, in packet order, possibly not the caller's.
    func deliverAll(_ deliver: @escaping (Packet) -> Void) throws
}
