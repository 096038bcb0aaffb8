public import Foundation
public import Relay

/// `GET /api/recordings/{stream}`: what was recorded of a stream in a range of wall-clock time
/// (the document's `RecordedSpans`).
public struct RecordingListing: Sendable, Codable, Equatable {
    /// A break between two spans inside the range (a restart, an outage).
    public struct Gap: Sendable, Codable, Equatable {
        public var start: Date
        public var end: Date
        /// Seconds.
        public var duration: Double

        public init(start: Date, end: Date, duration: Double) {
            self.start = start
            self.end = end
            self.duration = duration
        }
    }

    public var stream: String
    public var start: Date
    public var end: Date
    public var spans: [RecordedSpan]
    /// The breaks between spans inside the range.
    public var gaps: [Gap]
    public var segments: Int
    public var bytes: Int

    public init(stream: String, start: Date, end: Date, spans: [RecordedSpan], gaps: [Gap], segments: Int, bytes: Int) {
        self.stream = stream
        self.start = start
        self.end = end
        self.spans = spans
        self.gaps = gaps
        self.segments = segments
        self.bytes = bytes
    }

    /// The listing of `spans` (in time order) between `start` and `end`: the gaps between
    /// neighbours, the totals.
    public init(stream: String, start: Date, end: Date, spans: [RecordedSpan]) {
        let gaps = zip(spans, spans.dropFirst()).map { a, b in Gap(start: a.end, end: b.start, duration: b.start.timeIntervalSince(a.end)) }
        self.init(stream: stream, start: start, end: end, spans: spans, gaps: gaps,
                  segments: spans.reduce(0) { $0 + $1.segments }, bytes: spans.reduce(0) { $0 + $1.bytes })
    }
}

/// `GET /api/keys`: the node's public keys (what its evidence bundles are checked with).
public struct NodeKeys: Sendable, Codable, Equatable {
    public struct Key: Sendable, Codable, Equatable {
        public var algorithm: String
        /// The first 16 hex digits of the public key's SHA-256.
        public var id: String
        /// The raw Ed25519 public key, base64: `liverelay recordings verify-export --key` takes it.
        public var publicKey: String
        public init(algorithm: String, id: String, publicKey: String) {
            self.algorithm = algorithm
            self.id = id
            self.publicKey = publicKey
        }
    }
    public var node: String
    public var keys: [Key]
    public init(node: String, keys: [Key]) {
        self.node = node
        self.keys = keys
    }
}

/// `GET /api/incidents/{id}`: the incident and the bookmarks on its streams within its range.
public struct IncidentView: Sendable, Codable, Equatable {
    public var incident: Incident
    public var bookmarks: [Bookmark]
    public init(incident: Incident, bookmarks: [Bookmark]) {
        self.incident = incident
        self.bookmarks = bookmarks
    }
}
