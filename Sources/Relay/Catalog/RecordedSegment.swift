import Wire
public import Foundation
import Crypto

/// One recording file of a stream, as the catalog keeps it: where, when on the wall clock, how
/// long, and its SHA-256 chained to the stream's segment before it, so that an altered, missing
/// or extra file breaks the chain from there on.
public struct RecordedSegment: Sendable, Codable, Equatable {
    public var stream: String
    public var path: String
    /// Wall-clock time of the first picture: the sender's clock where it gives one (RTCP sender
    /// reports), else arrival.
    public var start: Date
    public var duration: Double
    public var bytes: Int
    /// Codec names of the tracks, comma-separated (`h264,aac`).
    public var codecs: String
    /// SHA-256 of the file, hex.
    public var sha256: String
    /// SHA-256 of the previous segment's chain and this file's hash, hex (set by the catalog).
    public var chain: String = ""
    /// When retention deleted the file (its row stays: the chain runs on through it).
    public var deletedAt: Date?
    /// The file's fragments as the recorder wrote them (nil: read the file to know them).
    public var index: SegmentIndex?

    enum CodingKeys: String, CodingKey {
        case stream, path, start, duration, bytes, codecs, sha256, chain, deletedAt
    }

    public init(stream: String, path: String, start: Date, duration: Double, bytes: Int, codecs: String, sha256: String) {
        self.stream = stream
        self.path = path
        self.start = start
        self.duration = duration
        self.bytes = bytes
        self.codecs = codecs
        self.sha256 = sha256
    }

    public var end: Date { start.addingTimeInterval(duration) }

    /// The chain value after `previous` (nil: the stream's first segment).
    public func chained(after previous: String?) -> String {
        var h = SHA256()
        h.update(data: Data(((previous ?? "") + sha256).utf8))
        return Self.hex(h.finalize())
    }

    /// SHA-256 of a file, read in 1 MiB pieces; nil when it cannot be read.
    public static func hash(file path: String) -> String? {
        guard let f = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? f.close() }
        var h = SHA256()
        do {
            // `read(upToCount:)` answers nil (or nothing) at the end of the file.
            while let piece = try f.read(upToCount: 1 << 20), !piece.isEmpty { h.update(data: piece) }
        } catch {
            return nil
        }
        return hex(h.finalize())
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String { Hex.encode(digest) }
}

/// A range of a stream's recording kept past retention until released (evidence).
public struct RecordingHold: Sendable, Codable, Equatable {
    public var id: Int
    public var stream: String
    public var start: Date
    public var end: Date
    public var reason: String
    public var at: Date

    public init(id: Int = 0, stream: String, start: Date, end: Date, reason: String, at: Date = Date()) {
        self.id = id
        self.stream = stream
        self.start = start
        self.end = end
        self.reason = reason
        self.at = at
    }

    public func covers(_ s: RecordedSegment) -> Bool { s.start < end && s.end > start }
}

/// A stretch recorded without a break, and the breaks between.
public struct RecordedSpan: Sendable, Codable, Equatable {
    public var start: Date
    public var end: Date
    public var duration: Double
    public var bytes: Int
    public var segments: Int

    public init(start: Date, end: Date, duration: Double, bytes: Int, segments: Int) {
        self.start = start
        self.end = end
        self.duration = duration
        self.bytes = bytes
        self.segments = segments
    }

    /// Segments (sorted by start) joined into spans: a segment that begins more than `maxGap`
    /// seconds after the previous one ended begins a new span (a restart, an outage).
    /// A segment that begins more than this many seconds after the one before ended begins a
    /// new span: a restart or an outage, not the rounding between two files.
    public static let gap = 1.5

    public static func spans(_ segments: [RecordedSegment], maxGap: Double = gap) -> [RecordedSpan] {
        var out: [RecordedSpan] = []
        for s in segments.sorted(by: { $0.start < $1.start }) {
            if var last = out.last, s.start.timeIntervalSince(last.end) <= maxGap {
                last.end = max(last.end, s.end)
                last.duration += s.duration
                last.bytes += s.bytes
                last.segments += 1
                out[out.count - 1] = last
            } else {
                out.append(RecordedSpan(start: s.start, end: s.end, duration: s.duration, bytes: s.bytes, segments: 1))
            }
        }
        return out
    }
}

/// SHA-256 fed piece by piece (swift-crypto), read out as hex.
public struct SHA256Stream: Sendable {
    private var hasher = SHA256()
    public init() {}
    public mutating func update(_ bytes: [UInt8]) { hasher.update(data: bytes) }
    public func hex() -> String { RecordedSegment.hex(hasher.finalize()) }
    public static func hex(_ bytes: [UInt8]) -> String { RecordedSegment.hex(SHA256.hash(data: bytes)) }
}

/// Who did what to which range of the archive, when and from where: played back, exported,
/// held, released, deleted (retention, as `retention`), bookmarked, or an incident of it made,
/// viewed or changed.
public struct AuditEntry: Sendable, Codable, Equatable {
    public enum Action: String, Sendable, Codable {
        case playback, export, manifest, hold, release, delete
        /// An incident made, viewed or changed (one line per stream it names).
        case incident
        case bookmark
        /// A camera steered: a PTZ move, stop, or preset gone to or set.
        case ptz
        /// An operator talked to the stream's camera or field unit (a line when it starts, one
        /// with its start and end when it ends).
        case talk
    }
    public var id: Int
    public var at: Date
    /// The identity's name; `anonymous` without `auth`; `retention` for LiveRelay's own deletions.
    public var who: String
    public var action: Action
    public var stream: String
    public var start: Date?
    public var end: Date?
    /// The client's address (nil for LiveRelay's own).
    public var address: String?
    public var detail: String

    public init(id: Int = 0, at: Date = Date(), who: String, action: Action, stream: String, start: Date? = nil, end: Date? = nil,
                address: String? = nil, detail: String = "") {
        self.id = id
        self.at = at
        self.who = who
        self.action = action
        self.stream = stream
        self.start = start
        self.end = end
        self.address = address
        self.detail = detail
    }
}

extension SHA256Stream {
    /// Bytes as lowercase hex.
    public static func hexString(_ bytes: some Sequence<UInt8>) -> String { RecordedSegment.hex(bytes) }
}

extension RecordedSegment {
    /// What a `segment_complete` event says of the file.
    var eventDetails: [String: String] {
        ["file": path, "bytes": "\(bytes)", "start": start.formatted(.iso8601), "duration": String(format: "%.3f", duration),
         "end": start.addingTimeInterval(duration).formatted(.iso8601), "codecs": codecs, "sha256": sha256]
    }
}
