public import Foundation
public import Relay
import SQLiteNIO
import NIOCore
import Logging

/// The embedded catalog: one SQLite file (`catalog.path`, default `STATE_DIR/catalog.sqlite`),
/// written through sqlite-nio's thread pool, so a slow disk never holds an event loop.
public final class SQLiteCatalog: CatalogStore {
    private let db: SQLiteConnection
    public let path: String

    private init(db: SQLiteConnection, path: String) {
        self.db = db
        self.path = path
    }

    /// Opens (or makes) the catalog at `path`, its directory included, and brings its tables up
    /// to this version's.
    public static func open(path: String) async throws -> SQLiteCatalog {
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        let db = try await SQLiteConnection.open(storage: .file(path: path), logger: Logger(label: "liverelay.catalog"))
        let c = SQLiteCatalog(db: db, path: path)
        do {
            // WAL: readers never wait for the writer; a crash loses at most the last transaction.
            _ = try await db.query("PRAGMA journal_mode=WAL", [])
            _ = try await db.query("PRAGMA synchronous=NORMAL", [])
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS stream_changes (
                    stream TEXT PRIMARY KEY NOT NULL,
                    action TEXT NOT NULL,
                    body TEXT,
                    at REAL NOT NULL)
                """, [])
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS segments (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    stream TEXT NOT NULL,
                    path TEXT NOT NULL,
                    start REAL NOT NULL,
                    duration REAL NOT NULL,
                    bytes INTEGER NOT NULL,
                    codecs TEXT NOT NULL,
                    sha256 TEXT NOT NULL,
                    chain TEXT NOT NULL,
                    deleted_at REAL)
                """, [])
            // Catalogs made before retention: the column is added once.
            let columns = try await db.query("PRAGMA table_info(segments)", []).compactMap { $0.column("name")?.string }
            if !columns.contains(where: { $0 == "deleted_at" }) { _ = try await db.query("ALTER TABLE segments ADD COLUMN deleted_at REAL", []) }
            // The recorder's fragment index (SegmentIndex's bytes), read only for playback and export.
            if !columns.contains(where: { $0 == "fragment_index" }) { _ = try await db.query("ALTER TABLE segments ADD COLUMN fragment_index BLOB", []) }
            // Which recorded span (a stretch without a break) each segment is in, kept as rows
            // come and go, so that listing a month is one grouped scan of an index.
            if !columns.contains(where: { $0 == "span" }) {
                _ = try await db.query("ALTER TABLE segments ADD COLUMN span INTEGER", [])
                try await c.assignSpans()
            }
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS holds (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    stream TEXT NOT NULL,
                    range_start REAL NOT NULL,
                    range_end REAL NOT NULL,
                    reason TEXT NOT NULL,
                    at REAL NOT NULL)
                """, [])
            _ = try await db.query("CREATE INDEX IF NOT EXISTS segments_by_time ON segments (stream, start)", [])
            _ = try await db.query("CREATE INDEX IF NOT EXISTS segments_spans ON segments (stream, start, duration, bytes, deleted_at, span)", [])
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS audit (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at REAL NOT NULL,
                    who TEXT NOT NULL,
                    action TEXT NOT NULL,
                    stream TEXT NOT NULL,
                    range_start REAL,
                    range_end REAL,
                    address TEXT,
                    detail TEXT NOT NULL)
                """, [])
            _ = try await db.query("CREATE INDEX IF NOT EXISTS audit_by_stream ON audit (stream, at)", [])
            // Incidents: the whole record as JSON beside the columns searched.
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS incidents (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    range_start REAL NOT NULL,
                    range_end REAL NOT NULL,
                    body TEXT NOT NULL)
                """, [])
            _ = try await db.query("""
                CREATE TABLE IF NOT EXISTS bookmarks (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    stream TEXT NOT NULL,
                    at REAL NOT NULL,
                    note TEXT NOT NULL,
                    who TEXT NOT NULL,
                    made REAL NOT NULL)
                """, [])
            _ = try await db.query("CREATE INDEX IF NOT EXISTS bookmarks_by_stream ON bookmarks (stream, at)", [])
        } catch {
            try? await db.close()
            throw error
        }
        return c
    }

    public func close() async {
        try? await db.close()
    }

    public func streamChanges() async throws -> [StreamChange] {
        let rows = try await db.query("SELECT stream, action, body, at FROM stream_changes ORDER BY at, stream", [])
        return rows.compactMap { row in
            guard let stream = row.column("stream")?.string, let action = row.column("action")?.string.flatMap(StreamChange.Action.init(rawValue:)),
                  let at = row.column("at")?.double else { return nil }
            let body = row.column("body")?.string.flatMap { try? JSONDecoder().decode([String: ConfigValue].self, from: Data($0.utf8)) }
            return StreamChange(stream: stream, action: action, body: body, at: Date(timeIntervalSince1970: at))
        }
    }

    public func save(_ change: StreamChange) async throws {
        let body: SQLiteData
        if let b = change.body {
            let data = try JSONEncoder().encode(b)
            body = .text(String(decoding: data, as: UTF8.self))
        } else {
            body = .null
        }
        _ = try await db.query("INSERT OR REPLACE INTO stream_changes (stream, action, body, at) VALUES (?, ?, ?, ?)",
                               [.text(change.stream), .text(change.action.rawValue), body, .float(change.at.timeIntervalSince1970)])
    }

    @discardableResult
    public func addSegment(_ segment: RecordedSegment) async throws -> RecordedSegment {
        let last = try await db.query("SELECT chain FROM segments WHERE stream = ? ORDER BY id DESC LIMIT 1", [.text(segment.stream)])
        var s = segment
        s.chain = s.chained(after: last.first?.column("chain")?.string)
        // Its span: the one of the live segment before it, when it ends at most `spanGap` before
        // this one starts; else a new one.
        let start = s.start.timeIntervalSince1970
        let before = try await db.query("""
            SELECT span, start + duration AS e FROM segments WHERE stream = ? AND deleted_at IS NULL AND start <= ? ORDER BY start DESC, id DESC LIMIT 1
            """, [.text(s.stream), .float(start)])
        var span: Int
        if let b = before.first, let e = b.column("e")?.double, let id = b.column("span")?.integer, start - e <= Self.spanGap {
            span = id
        } else {
            span = try await newSpan()
        }
        _ = try await db.query("""
            INSERT INTO segments (stream, path, start, duration, bytes, codecs, sha256, chain, fragment_index, span) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(s.stream), .text(s.path), .float(start), .float(s.duration), .integer(s.bytes),
                  .text(s.codecs), .text(s.sha256), .text(s.chain),
                  s.index.map { .blob(ByteBuffer(bytes: $0.encoded())) } ?? .null, .integer(span)])
        // Catalogued between two others (a recovered file): the span after may now join it.
        let after = try await db.query("""
            SELECT span, start FROM segments WHERE stream = ? AND deleted_at IS NULL AND start > ? ORDER BY start, id LIMIT 1
            """, [.text(s.stream), .float(start)])
        if let a = after.first, let next = a.column("span")?.integer, next != span, let t = a.column("start")?.double,
           t - (start + s.duration) <= Self.spanGap {
            _ = try await db.query("UPDATE segments SET span = ? WHERE stream = ? AND span = ?", [.integer(span), .text(s.stream), .integer(next)])
        }
        return s
    }

    static let spanGap = RecordedSpan.gap

    private func newSpan() async throws -> Int {
        try await db.query("SELECT COALESCE(MAX(span), 0) + 1 AS n FROM segments", []).first?.column("n")?.integer ?? 1
    }

    /// Spans for rows catalogued before spans were kept: each stream's live rows in time order.
    fileprivate func assignSpans() async throws {
        let rows = try await db.query("SELECT id, stream, start, start + duration AS e FROM segments WHERE deleted_at IS NULL ORDER BY stream, start, id", [])
        var span = 0
        var last: (stream: String, end: Double)?
        _ = try await db.query("BEGIN", [])
        for r in rows {
            guard let id = r.column("id")?.integer, let stream = r.column("stream")?.string, let start = r.column("start")?.double,
                  let end = r.column("e")?.double else { continue }
            if last?.stream != stream || start - (last?.end ?? 0) > Self.spanGap { span += 1 }
            last = (stream, max(end, last?.stream == stream ? last?.end ?? end : end))
            _ = try await db.query("UPDATE segments SET span = ? WHERE id = ?", [.integer(span), .integer(id)])
        }
        _ = try await db.query("COMMIT", [])
    }

    public func segments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment] {
        let rows = try await db.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments
            WHERE stream = ? AND start < ? AND start + duration > ? AND deleted_at IS NULL ORDER BY start, id
            """, [.text(stream), .float(to.timeIntervalSince1970), .float(from.timeIntervalSince1970)])
        return Self.segments(rows, stream: stream)
    }

    public func indexedSegments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment] {
        let rows = try await db.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at, fragment_index FROM segments
            WHERE stream = ? AND start < ? AND start + duration > ? AND deleted_at IS NULL ORDER BY start, id
            """, [.text(stream), .float(to.timeIntervalSince1970), .float(from.timeIntervalSince1970)])
        var out = Self.segments(rows, stream: stream)
        // Rows that did not decode (nil) simply have no index: their files are read instead.
        for (i, r) in zip(out.indices, rows) {
            if case .blob(var b)? = r.column("fragment_index"), let bytes = b.readBytes(length: b.readableBytes) {
                out[i].index = SegmentIndex(encoded: bytes)
            }
        }
        return out
    }

    public func segment(stream: String, file: String) async throws -> RecordedSegment? {
        guard !file.isEmpty, !file.contains("/") else { return nil }
        let rows = try await db.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments
            WHERE stream = ? AND deleted_at IS NULL AND (path = ? OR substr(path, -?) = ?) ORDER BY id DESC LIMIT 1
            """, [.text(stream), .text(file), .integer(file.utf8.count + 1), .text("/" + file)])
        return Self.segments(rows, stream: stream).first
    }

    public func spans(stream: String, from: Date, to: Date) async throws -> [RecordedSpan] {
        // One grouped scan of the spans index: a month of minutes is 43,200 rows.
        let rows = try await db.query("""
            SELECT MIN(start) AS a, MAX(start + duration) AS b, SUM(duration) AS d, SUM(bytes) AS n, COUNT(*) AS c FROM segments
            WHERE stream = ? AND start < ? AND start + duration > ? AND deleted_at IS NULL GROUP BY span ORDER BY a
            """, [.text(stream), .float(to.timeIntervalSince1970), .float(from.timeIntervalSince1970)])
        return rows.compactMap { r in
            guard let a = r.column("a")?.double, let b = r.column("b")?.double, let d = r.column("d")?.double,
                  let n = r.column("n")?.integer, let c = r.column("c")?.integer else { return nil }
            return RecordedSpan(start: Date(timeIntervalSince1970: a), end: Date(timeIntervalSince1970: b), duration: d, bytes: n, segments: c)
        }
    }

    public func chain(stream: String) async throws -> [RecordedSegment] {
        let rows = try await db.query("SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments WHERE stream = ? ORDER BY id",
                                      [.text(stream)])
        return Self.segments(rows, stream: stream)
    }

    public func recordedStreams() async throws -> [String] {
        try await db.query("SELECT DISTINCT stream FROM segments ORDER BY stream", []).compactMap { $0.column("stream")?.string }
    }

    private static func segments(_ rows: [SQLiteRow], stream: String) -> [RecordedSegment] {
        rows.compactMap { r in
            guard let path = r.column("path")?.string, let start = r.column("start")?.double, let duration = r.column("duration")?.double,
                  let bytes = r.column("bytes")?.integer, let codecs = r.column("codecs")?.string,
                  let sha = r.column("sha256")?.string, let chain = r.column("chain")?.string else { return nil }
            var s = RecordedSegment(stream: stream, path: path, start: Date(timeIntervalSince1970: start), duration: duration,
                                    bytes: bytes, codecs: codecs, sha256: sha)
            s.chain = chain
            s.deletedAt = r.column("deleted_at")?.double.map { Date(timeIntervalSince1970: $0) }
            return s
        }
    }

    public func markDeleted(stream: String, path: String, at: Date) async throws {
        let rows = try await db.query("UPDATE segments SET deleted_at = ? WHERE stream = ? AND path = ? AND deleted_at IS NULL RETURNING span, start",
                                      [.float(at.timeIntervalSince1970), .text(stream), .text(path)])
        // Taken from inside a span (a hold kept what was before it): what follows is a span of its
        // own, unless what is left still joins up (the segment taken was shorter than the gap
        // that breaks a span), as spans made again from the live segments would.
        guard let r = rows.first, let span = r.column("span")?.integer, let start = r.column("start")?.double else { return }
        let around = try await db.query("""
            SELECT (SELECT MAX(start + duration) FROM segments WHERE stream = ?1 AND span = ?2 AND deleted_at IS NULL AND start < ?3) AS e,
                   (SELECT MIN(start) FROM segments WHERE stream = ?1 AND span = ?2 AND deleted_at IS NULL AND start > ?3) AS s
            """, [.text(stream), .integer(span), .float(start)])
        guard let e = around.first?.column("e")?.double, let s = around.first?.column("s")?.double, s - e > Self.spanGap else { return }
        let next = try await newSpan()
        _ = try await db.query("UPDATE segments SET span = ? WHERE stream = ? AND span = ? AND start > ? AND deleted_at IS NULL",
                               [.integer(next), .text(stream), .integer(span), .float(start)])
    }

    public func addHold(_ hold: RecordingHold) async throws -> RecordingHold {
        // The id from the insert itself: another request's insert on this connection may come between two statements.
        let rows = try await db.query("INSERT INTO holds (stream, range_start, range_end, reason, at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                                      [.text(hold.stream), .float(hold.start.timeIntervalSince1970), .float(hold.end.timeIntervalSince1970),
                                       .text(hold.reason), .float(hold.at.timeIntervalSince1970)])
        var h = hold
        h.id = try Self.insertedID(rows)
        return h
    }

    public func holds(stream: String) async throws -> [RecordingHold] {
        let rows = try await db.query("SELECT id, range_start, range_end, reason, at FROM holds WHERE stream = ? ORDER BY id", [.text(stream)])
        return rows.compactMap { r in
            guard let id = r.column("id")?.integer, let start = r.column("range_start")?.double, let end = r.column("range_end")?.double,
                  let reason = r.column("reason")?.string, let at = r.column("at")?.double else { return nil }
            return RecordingHold(id: id, stream: stream, start: Date(timeIntervalSince1970: start), end: Date(timeIntervalSince1970: end),
                                 reason: reason, at: Date(timeIntervalSince1970: at))
        }
    }

    public func removeHold(stream: String, id: Int) async throws -> Bool {
        !(try await db.query("DELETE FROM holds WHERE stream = ? AND id = ? RETURNING id", [.text(stream), .integer(id)])).isEmpty
    }

    public func addAudit(_ e: AuditEntry) async throws {
        _ = try await db.query("INSERT INTO audit (at, who, action, stream, range_start, range_end, address, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               [.float(e.at.timeIntervalSince1970), .text(e.who), .text(e.action.rawValue), .text(e.stream),
                                e.start.map { .float($0.timeIntervalSince1970) } ?? .null, e.end.map { .float($0.timeIntervalSince1970) } ?? .null,
                                e.address.map { .text($0) } ?? .null, .text(e.detail)])
    }

    public func audit(stream: String?, since: Date, limit: Int) async throws -> [AuditEntry] {
        let columns = "id, at, who, action, stream, range_start, range_end, address, detail"
        let rows: [SQLiteRow]
        if let stream {
            rows = try await db.query("SELECT \(columns) FROM audit WHERE stream = ? AND at >= ? ORDER BY id DESC LIMIT ?",
                                      [.text(stream), .float(since.timeIntervalSince1970), .integer(limit)])
        } else {
            rows = try await db.query("SELECT \(columns) FROM audit WHERE at >= ? ORDER BY id DESC LIMIT ?", [.float(since.timeIntervalSince1970), .integer(limit)])
        }
        return rows.compactMap { r in
            guard let id = r.column("id")?.integer, let at = r.column("at")?.double, let who = r.column("who")?.string,
                  let action = r.column("action")?.string.flatMap(AuditEntry.Action.init(rawValue:)), let stream = r.column("stream")?.string,
                  let detail = r.column("detail")?.string else { return nil }
            return AuditEntry(id: id, at: Date(timeIntervalSince1970: at), who: who, action: action, stream: stream,
                              start: r.column("range_start")?.double.map { Date(timeIntervalSince1970: $0) },
                              end: r.column("range_end")?.double.map { Date(timeIntervalSince1970: $0) },
                              address: r.column("address")?.string, detail: detail)
        }
    }

    // MARK: incidents and bookmarks

    /// The id an `INSERT … RETURNING id` gave.
    static func insertedID(_ rows: [SQLiteRow]) throws -> Int {
        guard let id = rows.first?.column("id")?.integer else { throw CatalogError("an insert gave no id") }
        return id
    }

    public func addIncident(_ incident: Incident) async throws -> Incident {
        let rows = try await db.query("INSERT INTO incidents (range_start, range_end, body) VALUES (?, ?, '') RETURNING id",
                                      [.float(incident.start.timeIntervalSince1970), .float(incident.end.timeIntervalSince1970)])
        var i = incident
        i.id = try Self.insertedID(rows)
        guard try await updateIncident(i) else { throw CatalogError("incident \(i.id) went as it was made") }
        return i
    }

    public func updateIncident(_ incident: Incident) async throws -> Bool {
        let body = String(decoding: try CatalogJSON.encoder.encode(incident), as: UTF8.self)
        return !(try await db.query("UPDATE incidents SET range_start = ?, range_end = ?, body = ? WHERE id = ? RETURNING id",
                                    [.float(incident.start.timeIntervalSince1970), .float(incident.end.timeIntervalSince1970),
                                     .text(body), .integer(incident.id)])).isEmpty
    }

    public func incident(id: Int) async throws -> Incident? {
        try await db.query("SELECT body FROM incidents WHERE id = ?", [.integer(id)]).first?.column("body")?.string.flatMap(CatalogJSON.incident)
    }

    public func incidents(from: Date, to: Date, limit: Int) async throws -> [Incident] {
        try await db.query("SELECT body FROM incidents WHERE range_end > ? AND range_start < ? ORDER BY id DESC LIMIT ?",
                           [.float(from.timeIntervalSince1970), .float(to.timeIntervalSince1970), .integer(limit)])
            .compactMap { $0.column("body")?.string.flatMap(CatalogJSON.incident) }
    }

    public func addBookmark(_ b: Bookmark) async throws -> Bookmark {
        let rows = try await db.query("INSERT INTO bookmarks (stream, at, note, who, made) VALUES (?, ?, ?, ?, ?) RETURNING id",
                                      [.text(b.stream), .float(b.time.timeIntervalSince1970), .text(b.note), .text(b.who), .float(b.made.timeIntervalSince1970)])
        var out = b
        out.id = try Self.insertedID(rows)
        return out
    }

    public func bookmarks(stream: String?, from: Date, to: Date, limit: Int) async throws -> [Bookmark] {
        let range: [SQLiteData] = [.float(from.timeIntervalSince1970), .float(to.timeIntervalSince1970), .integer(limit)]
        let rows: [SQLiteRow]
        if let stream {
            rows = try await db.query("SELECT id, stream, at, note, who, made FROM bookmarks WHERE stream = ? AND at >= ? AND at < ? ORDER BY at LIMIT ?", [.text(stream)] + range)
        } else {
            rows = try await db.query("SELECT id, stream, at, note, who, made FROM bookmarks WHERE at >= ? AND at < ? ORDER BY at LIMIT ?", range)
        }
        return rows.compactMap { r in
            guard let id = r.column("id")?.integer, let stream = r.column("stream")?.string, let at = r.column("at")?.double,
                  let note = r.column("note")?.string, let who = r.column("who")?.string, let made = r.column("made")?.double else { return nil }
            return Bookmark(id: id, stream: stream, time: Date(timeIntervalSince1970: at), note: note, who: who, made: Date(timeIntervalSince1970: made))
        }
    }
}

/// The catalog answered something it should not have, in one line.
struct CatalogError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
