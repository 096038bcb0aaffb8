public import Foundation
import Wire

/// Something that happened, seen by several cameras: a time range, its streams, a title and
/// notes. While it is open its recordings are held (one hold per stream, reason
/// ``holdReason``); closing it releases them to retention.
public struct Incident: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable { case open, closed }
    public var id: Int
    public var title: String
    public var notes: String
    public var streams: [String]
    public var start: Date
    public var end: Date
    public var state: State
    /// The identity that made it (`anonymous` without `auth`).
    public var createdBy: String
    public var created: Date
    public var updated: Date

    public init(id: Int = 0, title: String, notes: String = "", streams: [String], start: Date, end: Date, state: State = .open,
                createdBy: String, created: Date = Date(), updated: Date = Date()) {
        self.id = id
        self.title = title
        self.notes = notes
        self.streams = streams
        self.start = start
        self.end = end
        self.state = state
        self.createdBy = createdBy
        self.created = created
        self.updated = updated
    }

    /// The reason of the holds an open incident keeps on its streams.
    public var holdReason: String { "incident \(id)" }

    /// Whether the incident matches a search: overlapping `from`..<`to`, naming `stream`, with
    /// `text` in its title or notes (case-insensitive); nil matches anything.
    public func matches(from: Date?, to: Date?, stream: String?, text: String?) -> Bool {
        if let from, end <= from { return false }
        if let to, start >= to { return false }
        if let stream, !streams.contains(stream) { return false }
        if let text, !text.isEmpty {
            guard title.utf8ContainsIgnoringCase(text) || notes.utf8ContainsIgnoringCase(text) else { return false }
        }
        return true
    }

    /// The most streams one incident names.
    public static let maxStreams = 64
}

/// A moment of a stream marked while watching (or afterwards), by whom, with a note.
public struct Bookmark: Sendable, Codable, Equatable {
    public var id: Int
    public var stream: String
    /// The moment marked, on the wall clock (the picture's capture time).
    public var time: Date
    public var note: String
    public var who: String
    /// When it was marked.
    public var made: Date

    public init(id: Int = 0, stream: String, time: Date, note: String = "", who: String, made: Date = Date()) {
        self.id = id
        self.stream = stream
        self.time = time
        self.note = note
        self.who = who
        self.made = made
    }
}

/// How a catalog keeps an incident's record: JSON, its dates as Foundation's own seconds
/// (exact: they read back equal, unlike the API's RFC 3339).
public enum CatalogJSON {
    public static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .deferredToDate
        e.outputFormatting = .sortedKeys
        return e
    }

    public static func incident(_ text: String) -> Incident? {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .deferredToDate
        return try? d.decode(Incident.self, from: Data(text.utf8))
    }
}
