import Testing
import Foundation
import Logging
import Relay
import Fleet
import TestSupport
import Bench

/// A real PostgreSQL server (Debian's, on a free port) for one test, stopped after it: a
/// process-wide one would outlive the test process (nothing stops a static).
func withPostgres(_ body: (String) async throws -> Void) async throws {
    let server = try PostgresServer()
    defer { server.stop() }
    try await body(server.url)
}

@Suite(.ownThreads, .serialized) struct PostgresCatalogTests {
    let logger = Logger(label: "test")

    @Test func segmentsChainSpansHoldsAndAuditAsTheSQLiteCatalog() async throws {
        try await withPostgres { url in
            do { try await segmentsBody(url) } catch { Issue.record("\(String(reflecting: error))") }
        }
    }

    func segmentsBody(_ url: String) async throws {
        let db = try PostgresDatabase(url: url, logger: logger)
        defer { db.close() }
        let c = PostgresCatalog(database: db)
        try await c.migrate()
        try await c.migrate() // a second node starting: nothing changes
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var first = RecordedSegment(stream: "cam", path: "/rec/a/cam/1.mp4", start: t0, duration: 60, bytes: 1000, codecs: "h264", sha256: "aa")
        first.index = nil
        let a = try await c.addSegment(first)
        let b = try await c.addSegment(RecordedSegment(stream: "cam", path: "/rec/b/cam/2.mp4", start: t0 + 60.5, duration: 60, bytes: 2000, codecs: "h264", sha256: "bb"))
        // A gap of 10 s: a new span.
        _ = try await c.addSegment(RecordedSegment(stream: "cam", path: "/rec/b/cam/3.mp4", start: t0 + 130.5, duration: 30, bytes: 500, codecs: "h264", sha256: "cc"))
        #expect(a.chain == a.chained(after: nil))
        #expect(b.chain == b.chained(after: a.chain))
        let chain = try await c.chain(stream: "cam")
        #expect(chain.map(\.path) == ["/rec/a/cam/1.mp4", "/rec/b/cam/2.mp4", "/rec/b/cam/3.mp4"])
        let spans = try await c.spans(stream: "cam", from: t0 - 10, to: t0 + 1000)
        #expect(spans.map(\.segments) == [2, 1])
        #expect(spans.first?.bytes == 3000)
        #expect(try await c.segments(stream: "cam", from: t0 + 70, to: t0 + 80).map(\.sha256) == ["bb"])
        #expect(try await c.segment(stream: "cam", file: "2.mp4")?.path == "/rec/b/cam/2.mp4")
        #expect(try await c.segment(stream: "cam", file: "b/cam/2.mp4") == nil)
        #expect(try await c.recordedStreams() == ["cam"])
        try await c.markDeleted(stream: "cam", path: "/rec/a/cam/1.mp4", at: t0 + 500)
        #expect(try await c.segments(stream: "cam", from: t0 - 10, to: t0 + 1000).count == 2)
        #expect(try await c.chain(stream: "cam").first?.deletedAt == t0 + 500)
        let h = try await c.addHold(RecordingHold(stream: "cam", start: t0, end: t0 + 60, reason: "incident 7"))
        #expect(h.id > 0)
        #expect(try await c.holds(stream: "cam").map(\.reason) == ["incident 7"])
        #expect(try await c.removeHold(stream: "cam", id: h.id))
        #expect(try await !c.removeHold(stream: "cam", id: h.id))
        try await c.addAudit(AuditEntry(at: t0, who: "ops", action: .export, stream: "cam", start: t0, end: t0 + 60, address: "10.0.0.1", detail: "it's \"quoted\""))
        let audit = try await c.audit(stream: "cam", since: t0 - 1, limit: 10)
        #expect(audit.first?.detail == "it's \"quoted\"")
        #expect(audit.first?.address == "10.0.0.1")
        try await CatalogIncidentChecks.run(c)
    }

    @Test func aChangeIsKeptAndToldToEveryNode() async throws {
        try await withPostgres { url in try await changeBody(url) }
    }

    func changeBody(_ url: String) async throws {
        let db = try PostgresDatabase(url: url, logger: logger)
        defer { db.close() }
        let c = PostgresCatalog(database: db)
        try await c.migrate()
        let heard = AsyncStream<String>.makeStream()
        let other = try PostgresDatabase(url: url, logger: logger)
        defer { other.close() }
        let ready = AsyncStream<Void>.makeStream()
        let listening = Task { await other.listenForTests(PostgresCatalog.streamsChannel, ready: { ready.continuation.yield() }) { heard.continuation.yield($0) } }
        defer { listening.cancel() }
        for await _ in ready.stream { break }
        try await c.save(StreamChange(stream: "lobby", action: .put, body: ["source": .string("rtsp://10.0.0.9/x")], at: Date(timeIntervalSince1970: 5)))
        var payload: String?
        for await p in heard.stream { payload = p; break }
        #expect(payload == "lobby")
        let changes = try await c.streamChanges()
        #expect(changes.map(\.stream) == ["lobby"])
        #expect(changes.first?.body == ["source": .string("rtsp://10.0.0.9/x")])
    }

    @Test(.tags(.fast)) func anUnreachableDatabaseIsOneLine() async throws {
        let db = try PostgresDatabase(url: "postgres://u:hunter2secret@127.0.0.1:\(FreePort.tcp())/x", logger: logger)
        defer { db.close() }
        let c = PostgresCatalog(database: db)
        let t = Date()
        do { try await c.migrate(); Issue.record("no error") } catch {
            #expect(Date().timeIntervalSince(t) < 8)
            let line = FleetNode.describe(error)
            #expect(!line.contains("\n"))
            #expect(!line.contains("hunter2secret"))
        }
        #expect(!db.redactedURL.contains("hunter2secret"))
    }
}

@Suite(.ownThreads, .tags(.fast)) struct RendezvousTests {
    @Test func everyNodeComputesTheSameOrderAndALeavingNodeMovesOnlyItsOwn() {
        let nodes = ["a", "b", "c"]
        let streams = (0..<300).map { "cam\($0)" }
        var share: [String: Int] = [:]
        for s in streams { share[Rendezvous.ranking(stream: s, nodes: nodes)[0], default: 0] += 1 }
        // Spread: each of three nodes gets a fair share.
        for n in nodes { #expect((70...130).contains(share[n] ?? 0), "node \(n) has \(share[n] ?? 0)") }
        for s in streams {
            let before = Rendezvous.ranking(stream: s, nodes: nodes)
            let after = Rendezvous.ranking(stream: s, nodes: ["c", "a"])
            if before[0] != "b" { #expect(after[0] == before[0]) }
            #expect(Rendezvous.ranking(stream: s, nodes: nodes.reversed()) == before)
        }
    }
}
