/// How the link from a source is doing, per track and for the transport: what a camera's RTP
/// (LiveRelay's own RTSP client) or a publisher's SRT connection says of loss, jitter, reorder
/// and round trip. Read by `/metrics` and the API.
public struct LinkHealth: Sendable, Codable, Equatable {
    /// One RTP track.
    public struct Track: Sendable, Codable, Equatable {
        public var index: Int
        /// `video` or `audio`.
        public var media: String
        public var packetsReceived: Int
        /// Never came, or came too late to be put back.
        public var packetsLost: Int
        /// Came after a later one.
        public var packetsReordered: Int
        /// RFC 3550's interarrival jitter, in seconds.
        public var jitter: Double

        public init(index: Int, media: String, packetsReceived: Int, packetsLost: Int, packetsReordered: Int, jitter: Double) {
            self.index = index
            self.media = media
            self.packetsReceived = packetsReceived
            self.packetsLost = packetsLost
            self.packetsReordered = packetsReordered
            self.jitter = jitter
        }
    }

    /// An SRT connection, as libsrt counts it.
    public struct SRT: Sendable, Codable, Equatable {
        public var roundTripMs: Double
        public var packetsReceived: Int
        public var packetsLost: Int
        /// Packets the sender sent again (its retransmissions that reached us).
        public var packetsRetransmitted: Int
        public var packetsDropped: Int
        public var receiveMbps: Double

        public init(roundTripMs: Double, packetsReceived: Int, packetsLost: Int, packetsRetransmitted: Int, packetsDropped: Int, receiveMbps: Double) {
            self.roundTripMs = roundTripMs
            self.packetsReceived = packetsReceived
            self.packetsLost = packetsLost
            self.packetsRetransmitted = packetsRetransmitted
            self.packetsDropped = packetsDropped
            self.receiveMbps = receiveMbps
        }
    }

    public var tracks: [Track] = []
    public var srt: SRT?

    public init(tracks: [Track] = [], srt: SRT? = nil) {
        self.tracks = tracks
        self.srt = srt
    }
}

/// A source that knows its link's health (LiveRelay's RTSP client). Read on the source's own
/// thread, like everything else of a source.
public protocol LinkHealthReporting: AnyObject {
    var linkHealth: LinkHealth { get }
}
