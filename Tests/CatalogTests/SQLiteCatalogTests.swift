import Testing
import Foundation
import Relay
import Catalog
import TestSupport

/// The embedded catalog on a real SQLite file: what the API changed comes back after the file is
/// closed and opened again, the latest per stream, and layers on the configuration file.
@Suite(.ownThreads, .tags(.fast)) struct SQLiteCatalogTests {
    @Test func changesComeBackAfterReopeningLatestPerStream() async throws {
        let dir = Paths.tempDirectory("catalog")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("state/catalog.sqlite").path
        do {
            let c = try await SQLiteCatalog.open(path: path)
            try await c.save(StreamChange(stream: "b", action: .put, body: ["source": .string("testsrc://"), "decode_threads": .number("3")], at: Date(timeIntervalSince1970: 10)))
            try await c.save(StreamChange(stream: "a", action: .remove, at: Date(timeIntervalSince1970: 20)))
            try await c.save(StreamChange(stream: "b", action: .put, body: ["source": .string("testsrc://?fps=5"), "keywords": .list([.string("x")])],
                                          at: Date(timeIntervalSince1970: 30)))
            await c.close()
        }
        let c = try await SQLiteCatalog.open(path: path)
        let changes = try await c.streamChanges()
        await c.close()
        #expect(changes.map(\.stream) == ["a", "b"])
        #expect(changes.first?.action == .remove)
        #expect(changes.last?.body == ["source": .string("testsrc://?fps=5"), "keywords": .list([.string("x")])])

        // Layered on a file that has `a` and `c`: `a` goes, `b` comes as the API set it, `c` stays.
        let file = try Configuration.parse("streams:\n  a: {source: \"testsrc://\"}\n  c: {source: \"testsrc://\"}", sources: TestSources.opener)
        let (layered, problems) = file.layering(changes + [StreamChange(stream: "d", action: .put, body: ["hls": .object(["variant": .string("dash")])])],
                                                sources: TestSources.opener)
        #expect(layered.streams.map(\.name).sorted() == ["b", "c"])
        #expect(layered.streams.first { $0.name == "b" }?.madeByAPI == true)
        #expect(layered.streams.first { $0.name == "c" }?.madeByAPI == false)
        // A change that no longer applies is said, and the rest applies.
        #expect(problems.count == 1 && problems[0].contains("stream d") && problems[0].contains("streams.d"), "\(problems)")
    }

    @Test func incidentsAndBookmarksAreKeptAndFound() async throws {
        let dir = Paths.tempDirectory("catalog-incidents")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.sqlite").path
        let c = try await SQLiteCatalog.open(path: path)
        try await CatalogIncidentChecks.run(c)
        await c.close()
        // Reopened: still there.
        let again = try await SQLiteCatalog.open(path: path)
        #expect(try await again.incidents(from: .distantPast, to: .distantFuture, limit: 10).count == 2)
        await again.close()
    }

    @Test func aCatalogThatCannotBeMadeIsAnError() async throws {
        await #expect(throws: (any Error).self) { _ = try await SQLiteCatalog.open(path: "/proc/liverelay/catalog.sqlite") }
    }

    /// Segments hashed into a chain: retention's deletions keep it whole, a tampered row breaks it.
    @Test func theChainRunsThroughRetentionAndBreaksOnAnEditedRow() async throws {
        let dir = Paths.tempDirectory("chain")
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try await SQLiteCatalog.open(path: dir.appendingPathComponent("catalog.sqlite").path)
        var paths: [String] = []
        for i in 0..<4 {
            let p = dir.appendingPathComponent("cam-2026112\(i).mp4").path
            try Data("segment \(i)".utf8).write(to: URL(fileURLWithPath: p))
            paths.append(p)
            try await c.addSegment(RecordedSegment(stream: "cam", path: p, start: Date(timeIntervalSince1970: Double(i) * 60), duration: 60,
                                                   bytes: 9, codecs: "h264", sha256: RecordedSegment.hash(file: p) ?? ""))
        }
        #expect(ChainVerifier.verify(stream: "cam", chain: try await c.chain(stream: "cam")) == nil)
        // Retention deletes the first: the chain still verifies, and it is no longer listed.
        try FileManager.default.removeItem(atPath: paths[0])
        try await c.markDeleted(stream: "cam", path: paths[0], at: Date())
        #expect(ChainVerifier.verify(stream: "cam", chain: try await c.chain(stream: "cam")) == nil)
        #expect(try await c.segments(stream: "cam", from: .distantPast, to: .distantFuture).count == 3)
        // An extra file beside them is named.
        let extra = dir.appendingPathComponent("cam-20261130-101500.mp4").path
        try Data("planted".utf8).write(to: URL(fileURLWithPath: extra))
        #expect(ChainVerifier.verify(stream: "cam", chain: try await c.chain(stream: "cam")) == .extra(path: extra))
        try FileManager.default.removeItem(atPath: extra)
        // A file that no longer matches its row is named; so is a row whose chain was rewritten.
        var chain = try await c.chain(stream: "cam")
        chain[2].sha256 = "0000"
        #expect(ChainVerifier.verify(stream: "cam", chain: chain) == .altered(path: paths[2], index: 2))
        chain = try await c.chain(stream: "cam")
        chain[2].chain = String(repeating: "0", count: 64)
        #expect(ChainVerifier.verify(stream: "cam", chain: chain) == .chainBroken(path: paths[2], index: 2))
        // Holds come back, and go.
        let h = try await c.addHold(RecordingHold(stream: "cam", start: Date(timeIntervalSince1970: 0), end: Date(timeIntervalSince1970: 90), reason: "case 7"))
        #expect(try await c.holds(stream: "cam").map(\.reason) == ["case 7"])
        #expect(try await c.removeHold(stream: "cam", id: h.id))
        #expect(try await !c.removeHold(stream: "cam", id: h.id))
        await c.close()
    }

    /// A segment shorter than the gap that breaks a span, taken from its middle, leaves one span
    /// (what is left still joins up); a longer one leaves two.
    @Test func takingAShortSegmentFromASpanLeavesItWhole() async throws {
        let dir = Paths.tempDirectory("spans")
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try await SQLiteCatalog.open(path: dir.appendingPathComponent("catalog.sqlite").path)
        var t = 1_800_000_000.0
        for (i, d) in [10.0, 1.2, 10, 10, 30, 10].enumerated() {
            try await c.addSegment(RecordedSegment(stream: "cam", path: "/r/cam-\(i).mp4", start: Date(timeIntervalSince1970: t), duration: d,
                                                   bytes: 100, codecs: "h264", sha256: "x"))
            t += d
        }
        let all = (Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: t + 1))
        try await c.markDeleted(stream: "cam", path: "/r/cam-1.mp4", at: Date())
        #expect(try await c.spans(stream: "cam", from: all.0, to: all.1).count == 1)
        try await c.markDeleted(stream: "cam", path: "/r/cam-4.mp4", at: Date())
        let spans = try await c.spans(stream: "cam", from: all.0, to: all.1)
        #expect(spans.map(\.segments) == [3, 1], "\(spans)")
        #expect(spans.count == RecordedSpan.spans(try await c.segments(stream: "cam", from: all.0, to: all.1)).count)
        await c.close()
    }

    /// The spans SQLite computes are the ones `RecordedSpan.spans` makes from the same rows.
    @Test func spansFromTheCatalogMatchSpansFromTheSegments() async throws {
        let dir = Paths.tempDirectory("spans")
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try await SQLiteCatalog.open(path: dir.appendingPathComponent("catalog.sqlite").path)
        var rng = SystemRandomNumberGenerator()
        var t = 1_800_000_000.0
        for i in 0..<400 {
            let d = Double.random(in: 1...60, using: &rng)
            try await c.addSegment(RecordedSegment(stream: "cam", path: "/r/cam-\(i).mp4", start: Date(timeIntervalSince1970: t), duration: d,
                                                   bytes: Int.random(in: 1...1_000_000, using: &rng), codecs: "h264", sha256: "x"))
            // Mostly back to back; now and then a gap (a restart) or an overlap.
            t += d + [0, 0, 0, 0.2, 5, 120, -0.5].randomElement(using: &rng)!
        }
        let from = Date(timeIntervalSince1970: 1_800_000_000 + 3600), to = Date(timeIntervalSince1970: t - 3600)
        func compare() async throws {
            let rows = try await c.segments(stream: "cam", from: from, to: to)
            let sql = try await c.spans(stream: "cam", from: from, to: to)
            let swift = RecordedSpan.spans(rows)
            #expect(sql.count == swift.count && sql.count > 3)
            for (a, b) in zip(sql, swift) {
                #expect(abs(a.start.timeIntervalSince(b.start)) < 1e-6 && abs(a.end.timeIntervalSince(b.end)) < 1e-6)
                #expect(a.segments == b.segments && a.bytes == b.bytes && abs(a.duration - b.duration) < 1e-6)
            }
        }
        try await compare()
        // Retention takes segments from the middle of spans (holds kept what was before): the
        // spans split there, as spans made from what is left.
        for i in stride(from: 50, to: 350, by: 37) { try await c.markDeleted(stream: "cam", path: "/r/cam-\(i).mp4", at: Date()) }
        try await compare()
        await c.close()
    }
}
