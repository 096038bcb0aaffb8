/// How to open a source. Defaults suit a live camera: low-latency probing, short deadlines.
public struct SourceOptions: Sendable, Hashable {
    /// RTSP lower transport.
    public enum Transport: String, Sendable, Hashable, CaseIterable, Codable {
        /// RTP over UDP: lowest latency, loses packets on a bad network.
        case udp
        /// RTP interleaved in the RTSP TCP connection: no loss, head-of-line blocking.
        case tcp
        /// UDP first; TCP if UDP does not deliver within the open deadline.
        case auto
    }

    public var transport: Transport = .auto

    /// Which RTSP client reads an `rtsp://` source.
    public enum RTSPClient: String, Sendable, Hashable, CaseIterable, Codable {
        /// LiveRelay's own (H.264 with AAC or G.711): a picture is handed on as its last RTP
        /// packet arrives. Other streams still go to FFmpeg's.
        case liverelay
        /// FFmpeg's RTSP demuxer: one frame interval later for H.264 (its parser waits for the
        /// next picture to start).
        case ffmpeg
    }

    public var rtspClient: RTSPClient = .liverelay
    /// RTSP: ask the camera for its ONVIF audio backchannel (`Require:
    /// www.onvif.org/ver20/backchannel`) and set it up beside the tracks read, for talking to
    /// its speaker. A camera without one is read as before.
    public var backchannel = false
    /// A stream LiveRelay's RTSP client does not take goes to FFmpeg's (false: it fails with
    /// one line instead; the fuzz target keeps to LiveRelay's own code this way).
    package var ffmpegFallback = true
    /// Deadline for connecting and probing the streams, in seconds.
    public var openTimeout: Double = 5
    /// Deadline for each packet read, in seconds: a silent source times out after this.
    public var readTimeout: Double = 3
    /// We listen and a publisher pushes to us (RTMP, RTSP ANNOUNCE/RECORD, SRT listener).
    public var listen: Bool = false
    /// How long to wait for a publisher when listening, in seconds (0: until stopped).
    public var listenTimeout: Double = 0
    /// Pace a file source at its own frame rate, so it stands in for a live camera.
    public var realtime: Bool = false
    /// Start a file again at its end, with timestamps that keep going up.
    public var loop: Bool = false
    /// Small probe size and analyze duration for live sources.
    public var lowLatencyProbe: Bool = true
    /// RTP reorder queue size (RTSP over UDP). `0` hands packets on as they arrive (arrival
    /// ordering); nil keeps FFmpeg's default reorder buffer (presentation ordering).
    public var reorderQueueSize: Int? = nil
    /// RTSP: the longest a gap in RTP sequence numbers holds later packets (seconds), so a
    /// reordered packet can still be put back while a lost one costs at most this much.
    /// nil keeps FFmpeg's default (0.1 s for RTSP).
    public var reorderWait: Double? = nil
    /// Further libavformat options, passed as they are. Unused ones are reported.
    public var extraOptions: [String: String] = [:]
    /// Read once the input is open, before its streams are probed: how long to analyse them
    /// (seconds), when whoever feeds the input knows better than the defaults (LiveRelay's own
    /// ingest knows which streams a publisher announced).
    public var analyzeDurationAfterOpen: AnalyzeHint? = nil

    public init() {}
}

/// A probe length decided once the input is open (see `SourceOptions.analyzeDurationAfterOpen`).
/// Compared by identity.
public final class AnalyzeHint: Sendable, Hashable {
    public let seconds: @Sendable () -> Double?
    public init(_ seconds: @escaping @Sendable () -> Double?) { self.seconds = seconds }
    public static func == (a: AnalyzeHint, b: AnalyzeHint) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }
}
