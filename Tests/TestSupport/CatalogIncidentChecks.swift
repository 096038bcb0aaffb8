import Testing
import Foundation
public import Relay

/// Incidents and bookmarks as every catalog keeps them (SQLite's and PostgreSQL's run the same
/// checks): ids given, fractions of a second kept, searches by range and stream, a change kept.
public enum CatalogIncidentChecks {
    public static func run(_ c: any CatalogStore) async throws {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000.125)
        let a = try await c.addIncident(Incident(title: "Gate 3", notes: "two units", streams: ["cam1", "cam2"], start: t0, end: t0 + 60, createdBy: "ops"))
        let b = try await c.addIncident(Incident(title: "Lobby", streams: ["cam3"], start: t0 + 3600, end: t0 + 3700, createdBy: "ops"))
        #expect(a.id > 0 && b.id > a.id)
        #expect(try await c.incident(id: a.id) == a)
        #expect(try await c.incident(id: b.id + 1000) == nil)
        // Overlapping a range, newest first.
        #expect(try await c.incidents(from: t0 - 10, to: t0 + 4000, limit: 10).map(\.id) == [b.id, a.id])
        #expect(try await c.incidents(from: t0 + 60, to: t0 + 3600, limit: 10).isEmpty)
        #expect(try await c.incidents(from: t0 + 30, to: t0 + 31, limit: 10).map(\.id) == [a.id])
        var closed = a
        closed.state = .closed
        closed.notes = "it's \"quoted\""
        #expect(try await c.updateIncident(closed))
        #expect(try await c.incident(id: a.id) == closed)
        var unknown = a
        unknown.id = b.id + 1000
        #expect(try await !c.updateIncident(unknown))

        let m1 = try await c.addBookmark(Bookmark(stream: "cam1", time: t0 + 5.5, note: "a car", who: "ops"))
        let m2 = try await c.addBookmark(Bookmark(stream: "cam2", time: t0 + 2.25, note: "", who: "lead"))
        _ = try await c.addBookmark(Bookmark(stream: "cam1", time: t0 + 100, note: "later", who: "ops"))
        #expect(m2.id > m1.id)
        // Times are kept as seconds since 1970: equal to well under a microsecond.
        func same(_ a: [Bookmark], _ b: [Bookmark]) -> Bool {
            a.count == b.count && zip(a, b).allSatisfy { x, y in
                x.id == y.id && x.stream == y.stream && x.note == y.note && x.who == y.who
                    && abs(x.time.timeIntervalSince(y.time)) < 1e-6 && abs(x.made.timeIntervalSince(y.made)) < 1e-6
            }
        }
        #expect(same(try await c.bookmarks(stream: nil, from: t0, to: t0 + 60, limit: 10), [m2, m1]))
        #expect(same(try await c.bookmarks(stream: "cam1", from: t0, to: t0 + 60, limit: 10), [m1]))
        #expect(same(try await c.bookmarks(stream: "cam1", from: t0, to: t0 + 200, limit: 1), [m1]))
    }
}
