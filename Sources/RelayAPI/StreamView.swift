public import Relay

/// A stream's metadata: `GET /streams/{name}/meta.json`, and `meta` in a `StreamView`.
public struct StreamMeta: Sendable, Codable {
    public var name: String
    public var title: String?
    public var description: String?
    public var keywords: [String]
    /// The MJPEG preview's path, where the stream has one.
    public var preview: String?
    /// The HLS playlist's path (the ladder's, with renditions), where the stream has HLS.
    public var hls: String?

    public init(name: String, title: String? = nil, description: String? = nil, keywords: [String] = [], preview: String? = nil, hls: String? = nil) {
        self.name = name
        self.title = title
        self.description = description
        self.keywords = keywords
        self.preview = preview
        self.hls = hls
    }
}

/// The API's view of a stream (`GET /api/streams`, `/api/streams/{name}`): its status and every
/// output from the hub's registry.
public struct StreamView: Sendable, Codable {
    public var stream: StreamStatus
    /// Every output, as registered: kind, state, policy, counters.
    public var sinks: [OutputStatus]
    public var meta: StreamMeta?
    public var forwards: [ForwardStatus]
    public var recordings: [String]
    public var hls: HLSView?
    /// `config` (the file) or `api` (made or last set through the API, kept in the catalog).
    public var origin: String
    /// In a fleet: the node that reads the stream's source (nil: none yet, or not a fleet).
    public var owner: String?
    /// In a fleet: the node that answered.
    public var node: String?
    /// A rendition's stream: what it is made from and its encoder (path and why).
    public var rendition: RenditionInfo?

    /// The stream's HLS output: its playlist now.
    public struct HLSView: Sendable, Codable {
        public var variant: String
        public var url: String
        public var mediaSequence: Int
        public var segments: Int
        public var targetDuration: Int
        public var ended: Bool
        /// Last frame arrived → its part (LL-HLS) or segment listed.
        public var availability: LatencySummary
        public var push: HLSPushCounters?
        public var directory: HLSDirectoryStatus?

        public init(variant: String, url: String, mediaSequence: Int, segments: Int, targetDuration: Int, ended: Bool,
                    availability: LatencySummary, push: HLSPushCounters? = nil, directory: HLSDirectoryStatus? = nil) {
            self.variant = variant
            self.url = url
            self.mediaSequence = mediaSequence
            self.segments = segments
            self.targetDuration = targetDuration
            self.ended = ended
            self.availability = availability
            self.push = push
            self.directory = directory
        }
    }

    public init(stream: StreamStatus, sinks: [OutputStatus] = [], meta: StreamMeta? = nil, forwards: [ForwardStatus] = [], recordings: [String] = [],
                hls: HLSView? = nil, origin: String = "config", owner: String? = nil, node: String? = nil, rendition: RenditionInfo? = nil) {
        self.stream = stream
        self.sinks = sinks
        self.meta = meta
        self.forwards = forwards
        self.recordings = recordings
        self.hls = hls
        self.origin = origin
        self.owner = owner
        self.node = node
        self.rendition = rendition
    }

    /// The output named `name`, if the stream has one.
    public func sink(named name: String) -> OutputStatus? {
        sinks.first { $0.name == name }
    }
}
