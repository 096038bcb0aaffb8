public import Foundation
public import Logging

/// A stream made, replaced or removed through the API, kept so that it survives a restart. The
/// configuration file stays the base; these are layered on it, the latest per stream.
public struct StreamChange: Sendable, Codable, Equatable {
    public enum Action: String, Sendable, Codable {
        /// Made or replaced with `body` (the API's stream keys).
        case put
        case remove
    }
    public var stream: String
    public var action: Action
    public var body: [String: ConfigValue]?
    public var at: Date

    public init(stream: String, action: Action, body: [String: ConfigValue]? = nil, at: Date = Date()) {
        self.stream = stream
        self.action = action
        self.body = body
        self.at = at
    }
}

/// Where LiveRelay keeps what outlives the process beyond its configuration file: an embedded
/// SQLite catalog by default (`Catalog` module); a shared database for a fleet.
public protocol CatalogStore: Sendable {
    /// The latest API change of each stream, oldest first.
    func streamChanges() async throws -> [StreamChange]
    /// Keeps `change` as its stream's latest.
    func save(_ change: StreamChange) async throws
    /// Adds a finished recording segment, chaining its hash to the stream's previous one;
    /// returns it with its chain.
    @discardableResult
    func addSegment(_ segment: RecordedSegment) async throws -> RecordedSegment
    /// A stream's segments that overlap `from`..<`to`, oldest first.
    func segments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment]
    /// A stream's recorded spans overlapping `from`..<`to` (as `RecordedSpan.spans` makes them
    /// from the live segments, with its 1.5 s gap), computed where the rows are.
    func spans(stream: String, from: Date, to: Date) async throws -> [RecordedSpan]
    /// `segments(stream:from:to:)` with each one's fragment index where the catalog has it
    /// (playback and export; the other readers do not need it).
    func indexedSegments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment]
    /// A stream's live segment whose file is named `file` (the last part of its path).
    func segment(stream: String, file: String) async throws -> RecordedSegment?
    /// Every segment of a stream in the order it was catalogued (the chain's order).
    func chain(stream: String) async throws -> [RecordedSegment]
    /// Streams with catalogued segments.
    func recordedStreams() async throws -> [String]
    /// Retention deleted the file: the row stays, marked, so the chain runs on through it.
    func markDeleted(stream: String, path: String, at: Date) async throws
    /// Keeps a range past retention; returns it with its id.
    func addHold(_ hold: RecordingHold) async throws -> RecordingHold
    func holds(stream: String) async throws -> [RecordingHold]
    /// Releases a hold; false when there was none with that id.
    func removeHold(stream: String, id: Int) async throws -> Bool
    /// Keeps a line of the audit log.
    func addAudit(_ entry: AuditEntry) async throws
    /// The audit log, newest first: of one stream (nil: all), at or after `since`, at most `limit`.
    func audit(stream: String?, since: Date, limit: Int) async throws -> [AuditEntry]
    /// Keeps a new incident; returns it with its id.
    func addIncident(_ incident: Incident) async throws -> Incident
    /// Replaces the incident with `incident.id`; false when there is none.
    func updateIncident(_ incident: Incident) async throws -> Bool
    func incident(id: Int) async throws -> Incident?
    /// Incidents overlapping `from`..<`to`, newest first, at most `limit`.
    func incidents(from: Date, to: Date, limit: Int) async throws -> [Incident]
    /// Keeps a bookmark; returns it with its id.
    func addBookmark(_ bookmark: Bookmark) async throws -> Bookmark
    /// Bookmarks of `stream` (nil: all) at `from`..<`to`, in time order, at most `limit`.
    func bookmarks(stream: String?, from: Date, to: Date, limit: Int) async throws -> [Bookmark]
}

extension CatalogStore {
    /// Keeps a line of the audit log; a failure is said, never thrown at the request it records.
    public func audit(_ entry: AuditEntry, logger: Logger) async {
        do { try await addAudit(entry) } catch {
            logger.error("catalog: an audit entry is not kept", metadata: ["action": "\(entry.action.rawValue)", "stream.name": "\(entry.stream)", "error": "\(error)"])
        }
    }
}

/// Hands a stream's finished segments to the catalog one at a time, in the order they were
/// finished (the chain follows that order), from a recorder's thread that must not wait; then
/// tells `onDone` (the `segment_complete` event), with or without a catalog.
public final class SegmentWriter: Sendable {
    private let continuation: AsyncStream<RecordedSegment>.Continuation
    private let task: Task<Void, Never>

    public init(catalog: (any CatalogStore)?, onDone: @escaping @Sendable (RecordedSegment) -> Void = { _ in },
                onError: @escaping @Sendable (RecordedSegment, any Error) -> Void) {
        let (stream, continuation) = AsyncStream<RecordedSegment>.makeStream(bufferingPolicy: .unbounded)
        self.continuation = continuation
        task = Task {
            for await s in stream {
                do {
                    try await catalog?.addSegment(s)
                    onDone(s)
                } catch { onError(s, error) }
            }
        }
    }

    public func add(_ segment: RecordedSegment) { continuation.yield(segment) }

    /// Takes no more, and returns once what was handed over is in the catalog (at shutdown,
    /// after the recorders wrote their last files).
    public func drain() async {
        continuation.finish()
        await task.value
    }
}

extension Configuration {
    /// The file's configuration with the API's changes layered on it: a `put` makes or replaces
    /// its stream (read as an API body is, and marked as made by the API), a `remove` drops it.
    /// A change that no longer applies (its body fails against this file's ingest, say) is left
    /// out and said, one line each; the rest apply.
    public func layering(_ changes: [StreamChange], sources: SourceOpener) -> (Configuration, problems: [String]) {
        var out = self
        var problems: [String] = []
        for c in changes {
            switch c.action {
            case .remove:
                out.streams.removeAll { $0.name == c.stream }
            case .put:
                do throws(ConfigError) {
                    let s = try Self.apiStream(name: c.stream, body: c.body ?? [:], base: self, sources: sources, file: "catalog")
                    if let i = out.streams.firstIndex(where: { $0.name == c.stream }) { out.streams[i] = s } else { out.streams.append(s) }
                } catch {
                    problems.append("stream \(c.stream) as the API last set it is not applied: \(error)")
                }
            }
        }
        return (out, problems)
    }

    /// A stream from an API body, checked against `base`'s server, ingest and auth.
    static func apiStream(name: String, body: [String: ConfigValue], base: Configuration, sources: SourceOpener,
                          file: String) throws(ConfigError) -> Stream {
        let path = "streams.\(name.prefix(100))"
        guard isStreamName(name) else {
            throw ConfigError(file: file, path: path, problem: "stream names may use letters, digits, - and _ only")
        }
        var s = try Stream(config: ConfigValue.object(body).node, name: name, path: path, Reader(file: file), sources: sources)
        // Running a command is the server's operator's to decide, never an API client's.
        if ExecSource.isExec(s.source) {
            throw ConfigError(file: file, path: "\(path).source", problem: "exec: sources are set in the configuration file only")
        }
        s.madeByAPI = true
        var check = base
        check.streams = [s]
        try check.checkIngest(file: file)
        return s
    }
}
