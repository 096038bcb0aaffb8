public import Foundation
public import Relay
import PostgresNIO
import NIOCore
import Logging

/// The fleet's catalog: the same as the embedded SQLite one (API stream changes, the recording
/// index with its hash chain and spans, holds, the audit log), in one PostgreSQL database that
/// every node shares. Times are seconds since 1970 (double precision), as in the SQLite file.
/// Whatever one node catalogues, every node lists and plays.
public final class PostgresCatalog: CatalogStore {
    public let database: PostgresDatabase
    /// The channel told of every API change of a stream (its name): the other nodes apply it.
    public static let streamsChannel = "liverelay_streams"

    public init(database: PostgresDatabase) {
        self.database = database
    }

    /// Makes the tables when they are missing (every node may; the first one makes them), under
    /// an advisory lock so that nodes starting together do not race.
    public func migrate() async throws {
        try await database.transaction { s in
            try await s.query("SELECT pg_advisory_xact_lock(7436615)")
            for statement in Self.schema { try await s.query(PostgresQuery(unsafeSQL: statement)) }
        }
    }

    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS stream_changes (
            stream TEXT PRIMARY KEY, action TEXT NOT NULL, body TEXT, at DOUBLE PRECISION NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS segments (
            id BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, path TEXT NOT NULL,
            start DOUBLE PRECISION NOT NULL, duration DOUBLE PRECISION NOT NULL, bytes BIGINT NOT NULL,
            codecs TEXT NOT NULL, sha256 TEXT NOT NULL, chain TEXT NOT NULL, deleted_at DOUBLE PRECISION,
            fragment_index BYTEA, span BIGINT NOT NULL, node TEXT)
        """,
        "CREATE SEQUENCE IF NOT EXISTS segment_spans",
        "CREATE INDEX IF NOT EXISTS segments_by_time ON segments (stream, start)",
        "CREATE INDEX IF NOT EXISTS segments_spans ON segments (stream, span) WHERE deleted_at IS NULL",
        """
        CREATE TABLE IF NOT EXISTS holds (
            id BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, range_start DOUBLE PRECISION NOT NULL,
            range_end DOUBLE PRECISION NOT NULL, reason TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS audit (
            id BIGSERIAL PRIMARY KEY, at DOUBLE PRECISION NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
            stream TEXT NOT NULL, range_start DOUBLE PRECISION, range_end DOUBLE PRECISION, address TEXT, detail TEXT NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS audit_by_stream ON audit (stream, at)",
        """
        CREATE TABLE IF NOT EXISTS incidents (
            id BIGSERIAL PRIMARY KEY, range_start DOUBLE PRECISION NOT NULL, range_end DOUBLE PRECISION NOT NULL, body TEXT NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS bookmarks (
            id BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, note TEXT NOT NULL, who TEXT NOT NULL,
            made DOUBLE PRECISION NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS bookmarks_by_stream ON bookmarks (stream, at)",
        // The fleet: nodes heartbeat; each pulled stream is leased to one node at a time.
        """
        CREATE TABLE IF NOT EXISTS nodes (
            name TEXT PRIMARY KEY, url TEXT NOT NULL, rtsp_url TEXT, started TIMESTAMPTZ NOT NULL,
            heartbeat TIMESTAMPTZ NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS leases (
            stream TEXT PRIMARY KEY, node TEXT NOT NULL, until TIMESTAMPTZ NOT NULL, since TIMESTAMPTZ NOT NULL,
            moves BIGINT NOT NULL DEFAULT 0)
        """,
    ]

    // MARK: stream changes

    public func streamChanges() async throws -> [StreamChange] {
        let rows = try await database.query("SELECT stream, action, body, at FROM stream_changes ORDER BY at, stream")
        return rows.compactMap { row in
            guard let (stream, action, body, at) = try? row.decode((String, String, String?, Double).self),
                  let a = StreamChange.Action(rawValue: action) else { return nil }
            let b = body.flatMap { try? JSONDecoder().decode([String: ConfigValue].self, from: Data($0.utf8)) }
            return StreamChange(stream: stream, action: a, body: b, at: Date(timeIntervalSince1970: at))
        }
    }

    /// Keeps the change and tells every node (`streamsChannel`), in one transaction: a node
    /// told reads it back.
    public func save(_ change: StreamChange) async throws {
        let body = try change.body.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let stream = change.stream, action = change.action.rawValue, at = change.at.timeIntervalSince1970
        try await database.transaction { s in
            try await s.query("""
                INSERT INTO stream_changes (stream, action, body, at) VALUES (\(stream), \(action), \(body), \(at))
                ON CONFLICT (stream) DO UPDATE SET action = EXCLUDED.action, body = EXCLUDED.body, at = EXCLUDED.at
                """)
            try await s.query("SELECT pg_notify(\(Self.streamsChannel), \(stream))")
        }
    }

    // MARK: segments

    /// Chained after the stream's last segment whichever node catalogued it: the stream's
    /// rows are taken one at a time (a transaction-scoped advisory lock on the stream).
    @discardableResult
    public func addSegment(_ segment: RecordedSegment) async throws -> RecordedSegment {
        let index: ByteBuffer? = segment.index.map { ByteBuffer(bytes: $0.encoded()) }
        return try await database.transaction { s in
            var seg = segment
            let stream = seg.stream
            try await s.query("SELECT pg_advisory_xact_lock(hashtext('liverelay.segments.' || \(stream)))")
            let last = try await s.query("SELECT chain FROM segments WHERE stream = \(stream) ORDER BY id DESC LIMIT 1")
            seg.chain = seg.chained(after: try last.first?.decode(String.self))
            let start = seg.start.timeIntervalSince1970
            let before = try await s.query("""
                SELECT span, start + duration FROM segments WHERE stream = \(stream) AND deleted_at IS NULL AND start <= \(start)
                ORDER BY start DESC, id DESC LIMIT 1
                """)
            var span: Int
            if let b = before.first, let (id, e) = try? b.decode((Int, Double).self), start - e <= RecordedSpan.gap {
                span = id
            } else {
                span = try await Self.newSpan(s)
            }
            let path = seg.path, duration = seg.duration, bytes = seg.bytes, codecs = seg.codecs, sha = seg.sha256, chain = seg.chain
            try await s.query("""
                INSERT INTO segments (stream, path, start, duration, bytes, codecs, sha256, chain, fragment_index, span)
                VALUES (\(stream), \(path), \(start), \(duration), \(bytes), \(codecs), \(sha), \(chain), \(index), \(span))
                """)
            let after = try await s.query("""
                SELECT span, start FROM segments WHERE stream = \(stream) AND deleted_at IS NULL AND start > \(start) ORDER BY start, id LIMIT 1
                """)
            if let a = after.first, let (next, t) = try? a.decode((Int, Double).self), next != span, t - (start + duration) <= RecordedSpan.gap {
                try await s.query("UPDATE segments SET span = \(span) WHERE stream = \(stream) AND span = \(next)")
            }
            return seg
        }
    }

    private static func newSpan(_ s: PostgresDatabase.Session) async throws -> Int {
        try await s.query("SELECT nextval('segment_spans')").first?.decode(Int.self) ?? 1
    }

    private static let segmentColumns = "path, start, duration, bytes, codecs, sha256, chain, deleted_at"

    private static func segments(_ rows: [PostgresRow], stream: String) -> [RecordedSegment] {
        rows.compactMap { r in
            guard let (path, start, duration, bytes, codecs, sha, chain, deleted) =
                    try? r.decode((String, Double, Double, Int, String, String, String, Double?).self) else { return nil }
            var s = RecordedSegment(stream: stream, path: path, start: Date(timeIntervalSince1970: start), duration: duration,
                                    bytes: bytes, codecs: codecs, sha256: sha)
            s.chain = chain
            s.deletedAt = deleted.map { Date(timeIntervalSince1970: $0) }
            return s
        }
    }

    public func segments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment] {
        let a = from.timeIntervalSince1970, b = to.timeIntervalSince1970
        let rows = try await database.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments
            WHERE stream = \(stream) AND start < \(b) AND start + duration > \(a) AND deleted_at IS NULL ORDER BY start, id
            """)
        return Self.segments(rows, stream: stream)
    }

    public func indexedSegments(stream: String, from: Date, to: Date) async throws -> [RecordedSegment] {
        let a = from.timeIntervalSince1970, b = to.timeIntervalSince1970
        let rows = try await database.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at, fragment_index FROM segments
            WHERE stream = \(stream) AND start < \(b) AND start + duration > \(a) AND deleted_at IS NULL ORDER BY start, id
            """)
        var out = Self.segments(rows, stream: stream)
        for (i, r) in zip(out.indices, rows) {
            if var buffer = try? r.decode((String, Double, Double, Int, String, String, String, Double?, ByteBuffer?).self).8,
               let bytes = buffer.readBytes(length: buffer.readableBytes) {
                out[i].index = SegmentIndex(encoded: bytes)
            }
        }
        return out
    }

    public func segment(stream: String, file: String) async throws -> RecordedSegment? {
        guard !file.isEmpty, !file.utf8.contains(0x2F) else { return nil }
        let suffix = "/" + file
        let rows = try await database.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments
            WHERE stream = \(stream) AND deleted_at IS NULL AND (path = \(file) OR right(path, \(suffix.count)::int4) = \(suffix))
            ORDER BY id DESC LIMIT 1
            """)
        return Self.segments(rows, stream: stream).first
    }

    public func spans(stream: String, from: Date, to: Date) async throws -> [RecordedSpan] {
        let a = from.timeIntervalSince1970, b = to.timeIntervalSince1970
        let rows = try await database.query("""
            SELECT MIN(start) AS a, MAX(start + duration) AS b, SUM(duration) AS d, SUM(bytes)::BIGINT AS n, COUNT(*) AS c FROM segments
            WHERE stream = \(stream) AND start < \(b) AND start + duration > \(a) AND deleted_at IS NULL GROUP BY span ORDER BY a
            """)
        return rows.compactMap { r in
            guard let (a, b, d, n, c) = try? r.decode((Double, Double, Double, Int, Int).self) else { return nil }
            return RecordedSpan(start: Date(timeIntervalSince1970: a), end: Date(timeIntervalSince1970: b), duration: d, bytes: n, segments: c)
        }
    }

    public func chain(stream: String) async throws -> [RecordedSegment] {
        Self.segments(try await database.query("""
            SELECT path, start, duration, bytes, codecs, sha256, chain, deleted_at FROM segments WHERE stream = \(stream) ORDER BY id
            """), stream: stream)
    }

    public func recordedStreams() async throws -> [String] {
        try await database.query("SELECT DISTINCT stream FROM segments ORDER BY stream").compactMap { try? $0.decode(String.self) }
    }

    public func markDeleted(stream: String, path: String, at: Date) async throws {
        let when = at.timeIntervalSince1970
        try await database.transaction { s in
            try await s.query("SELECT pg_advisory_xact_lock(hashtext('liverelay.segments.' || \(stream)))")
            let rows = try await s.query("""
                UPDATE segments SET deleted_at = \(when) WHERE stream = \(stream) AND path = \(path) AND deleted_at IS NULL RETURNING span, start
                """)
            guard let r = rows.first, let (span, start) = try? r.decode((Int, Double).self) else { return }
            // A split only where what is left no longer joins up (as SQLiteCatalog).
            let around = try await s.query("""
                SELECT (SELECT MAX(start + duration) FROM segments WHERE stream = \(stream) AND span = \(span) AND deleted_at IS NULL AND start < \(start)),
                       (SELECT MIN(start) FROM segments WHERE stream = \(stream) AND span = \(span) AND deleted_at IS NULL AND start > \(start))
                """)
            guard let row = around.first, let (e, after) = try? row.decode((Double?, Double?).self),
                  let e, let after, after - e > RecordedSpan.gap else { return }
            let next = try await Self.newSpan(s)
            try await s.query("""
                UPDATE segments SET span = \(next) WHERE stream = \(stream) AND span = \(span) AND start > \(start) AND deleted_at IS NULL
                """)
        }
    }

    // MARK: holds and audit

    public func addHold(_ hold: RecordingHold) async throws -> RecordingHold {
        let rows = try await database.query("""
            INSERT INTO holds (stream, range_start, range_end, reason, at)
            VALUES (\(hold.stream), \(hold.start.timeIntervalSince1970), \(hold.end.timeIntervalSince1970), \(hold.reason), \(hold.at.timeIntervalSince1970))
            RETURNING id
            """)
        var h = hold
        h.id = try rows.first?.decode(Int.self) ?? 0
        return h
    }

    public func holds(stream: String) async throws -> [RecordingHold] {
        try await database.query("SELECT id, range_start, range_end, reason, at FROM holds WHERE stream = \(stream) ORDER BY id").compactMap { r in
            guard let (id, a, b, reason, at) = try? r.decode((Int, Double, Double, String, Double).self) else { return nil }
            return RecordingHold(id: id, stream: stream, start: Date(timeIntervalSince1970: a), end: Date(timeIntervalSince1970: b),
                                 reason: reason, at: Date(timeIntervalSince1970: at))
        }
    }

    public func removeHold(stream: String, id: Int) async throws -> Bool {
        !(try await database.query("DELETE FROM holds WHERE stream = \(stream) AND id = \(id) RETURNING id")).isEmpty
    }

    // MARK: incidents and bookmarks

    public func addIncident(_ incident: Incident) async throws -> Incident {
        let rows = try await database.query("""
            INSERT INTO incidents (range_start, range_end, body)
            VALUES (\(incident.start.timeIntervalSince1970), \(incident.end.timeIntervalSince1970), '') RETURNING id
            """)
        var i = incident
        i.id = try rows.first?.decode(Int.self) ?? 0
        _ = try await updateIncident(i)
        return i
    }

    public func updateIncident(_ incident: Incident) async throws -> Bool {
        let body = String(decoding: try CatalogJSON.encoder.encode(incident), as: UTF8.self)
        return !(try await database.query("""
            UPDATE incidents SET range_start = \(incident.start.timeIntervalSince1970), range_end = \(incident.end.timeIntervalSince1970),
            body = \(body) WHERE id = \(incident.id) RETURNING id
            """)).isEmpty
    }

    public func incident(id: Int) async throws -> Incident? {
        try await database.query("SELECT body FROM incidents WHERE id = \(id)").first
            .flatMap { try? $0.decode(String.self) }.flatMap(CatalogJSON.incident)
    }

    public func incidents(from: Date, to: Date, limit: Int) async throws -> [Incident] {
        try await database.query("""
            SELECT body FROM incidents WHERE range_end > \(from.timeIntervalSince1970) AND range_start < \(to.timeIntervalSince1970)
            ORDER BY id DESC LIMIT \(limit)
            """).compactMap { (try? $0.decode(String.self)).flatMap(CatalogJSON.incident) }
    }

    public func addBookmark(_ b: Bookmark) async throws -> Bookmark {
        let rows = try await database.query("""
            INSERT INTO bookmarks (stream, at, note, who, made)
            VALUES (\(b.stream), \(b.time.timeIntervalSince1970), \(b.note), \(b.who), \(b.made.timeIntervalSince1970)) RETURNING id
            """)
        var out = b
        out.id = try rows.first?.decode(Int.self) ?? 0
        return out
    }

    public func bookmarks(stream: String?, from: Date, to: Date, limit: Int) async throws -> [Bookmark] {
        let a = from.timeIntervalSince1970, z = to.timeIntervalSince1970
        let rows: [PostgresRow]
        if let stream {
            rows = try await database.query("""
                SELECT id, stream, at, note, who, made FROM bookmarks WHERE stream = \(stream) AND at >= \(a) AND at < \(z) ORDER BY at LIMIT \(limit)
                """)
        } else {
            rows = try await database.query("SELECT id, stream, at, note, who, made FROM bookmarks WHERE at >= \(a) AND at < \(z) ORDER BY at LIMIT \(limit)")
        }
        return rows.compactMap { r in
            guard let (id, stream, at, note, who, made) = try? r.decode((Int, String, Double, String, String, Double).self) else { return nil }
            return Bookmark(id: id, stream: stream, time: Date(timeIntervalSince1970: at), note: note, who: who, made: Date(timeIntervalSince1970: made))
        }
    }

    public func addAudit(_ e: AuditEntry) async throws {
        try await database.query("""
            INSERT INTO audit (at, who, action, stream, range_start, range_end, address, detail)
            VALUES (\(e.at.timeIntervalSince1970), \(e.who), \(e.action.rawValue), \(e.stream), \(e.start?.timeIntervalSince1970),
                    \(e.end?.timeIntervalSince1970), \(e.address), \(e.detail))
            """)
    }

    public func audit(stream: String?, since: Date, limit: Int) async throws -> [AuditEntry] {
        let t = since.timeIntervalSince1970
        let rows: [PostgresRow]
        if let stream {
            rows = try await database.query("""
                SELECT id, at, who, action, stream, range_start, range_end, address, detail FROM audit
                WHERE stream = \(stream) AND at >= \(t) ORDER BY id DESC LIMIT \(limit)
                """)
        } else {
            rows = try await database.query("""
                SELECT id, at, who, action, stream, range_start, range_end, address, detail FROM audit WHERE at >= \(t) ORDER BY id DESC LIMIT \(limit)
                """)
        }
        return rows.compactMap { r in
            guard let (id, at, who, action, stream, a, b, address, detail) =
                    try? r.decode((Int, Double, String, String, String, Double?, Double?, String?, String).self),
                  let act = AuditEntry.Action(rawValue: action) else { return nil }
            return AuditEntry(id: id, at: Date(timeIntervalSince1970: at), who: who, action: act, stream: stream,
                              start: a.map { Date(timeIntervalSince1970: $0) }, end: b.map { Date(timeIntervalSince1970: $0) },
                              address: address, detail: detail)
        }
    }
}
