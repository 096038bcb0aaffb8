import Testing
import Foundation
import Relay
import Catalog
import TestSupport

/// The embedded catalog on a real SQLite file: what the API changed comes back after the file is
/// closed and opened again, the latest per stream, and layers on the configuration file.
@Suite struct SQLiteCatalogTests {
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

    @Test func aCatalogThatCannotBeMadeIsAnError() async throws {
        await #expect(throws: (any Error).self) { _ = try await SQLiteCatalog.open(path: "/proc/liverelay/catalog.sqlite") }
    }
}
