public import Foundation
public import Demux
public import Decode
public import MediaCore

/// Where a stream's ingest stands.
public enum StreamState: String, Sendable, Hashable, Codable {
    case connecting
    case live
    case reconnecting
    case stopped
    /// An on-demand source with nobody consuming it: not connected.
    case idle

    init(_ s: SourceState) {
        switch s {
        case .connecting: self = .connecting
        case .live: self = .live
        case .reconnecting: self = .reconnecting
        case .stopped: self = .stopped
        }
    }
}

/// What the API shows of a stream.
public struct StreamStatus: Sendable, Codable {
    public var name: String
    public var title: String?
    public var source: String
    public var state: StreamState
    public var reconnectAttempt: Int?
    public var lastError: String?
    public var since: Date?
    /// When the picture was last lost (or the stream started without one); nil while live.
    public var signalLostSince: Date?
    public var codec: String?
    public var width: Int?
    public var height: Int?
    public var fpsIn: Double
    public var decoderPath: String?
    public var fallbackReason: String?
    public var decoding: Bool
    public var connections: Int
    public var arrivalToDecoded: LatencySummary
    public var decodeCounters: DecodeCounters?
    /// A realtime file's pacing: `packets` (each when due) or `keyframes` (a keyframe interval
    /// together when its keyframe is due: nothing consumes sooner). Nil for other sources.
    public var pacing: String?
    /// RTSP: `tcp` once UDP media stopped mid-session and the source moved to TCP; nil otherwise.
    public var transportFallback: String?
    /// Media was lost since the last clean keyframe: pictures until the next one are damaged
    /// (a `clean` preview holds its last clean picture meanwhile).
    public var damaged = false
    /// When the current damage began; nil while clean.
    public var damagedSince: Date?
    /// Times the stream went from clean to damaged.
    public var damageEvents = 0
    /// RTP packets the source reported lost or too late (RTSP over UDP).
    public var rtpPacketsLost = 0
    /// The link from the source: RTP per track (LiveRelay's RTSP client), SRT (a publisher on
    /// the one-port SRT ingest); nil when the source says nothing of it.
    public var link: LinkHealth?
    /// Media bytes taken from the source since the stream started (a publisher's bitrate is its
    /// rate).
    public var bytesIn = 0
    /// Bits per second over the last few seconds.
    public var bitrateIn: Double = 0

    init(name: String, title: String?, source: String) {
        self.name = name
        self.title = title
        self.source = source
        state = .connecting
        signalLostSince = Date()
        fpsIn = 0
        decoding = false
        connections = 0
        arrivalToDecoded = LatencySummary(count: 0)
    }
}
