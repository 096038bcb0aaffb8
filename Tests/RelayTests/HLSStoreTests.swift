import Testing
import TestSupport
import Foundation
import Synchronization
@testable import Relay

/// The HLS store on its own: no FFmpeg, no server; bytes stand in for segments.
@Suite(.ownThreads, .tags(.fast)) struct HLSStoreTests {
    static func settings(_ variant: HLSSettings.Variant, count: Int = 3) -> HLSSettings {
        var s = HLSSettings(variant: variant)
        s.segmentDuration = 1
        s.partDuration = 0.25
        s.segmentCount = count
        return s
    }

    static func addSegment(_ store: HLSStore, _ seq: Int, duration: Double = 1, discontinuity: Bool = false, byte: UInt8? = nil, independent: Bool = true) {
        store.beginSegment(sequence: seq, uri: "seg\(seq).ts", programDateTime: Date(), discontinuity: discontinuity, initURI: nil, independent: independent)
        store.completeSegment(duration: duration, data: [byte ?? UInt8(seq % 256)])
    }

    @Test func theSlidingWindowKeepsCountSegmentsAndCarriesDiscontinuitiesOut() async {
        let now = Atomic<UInt64>(0)
        let store = HLSStore(settings: Self.settings(.mpegts, count: 3), clock: { now.load(ordering: .relaxed) })
        let events = Mutex<[String]>([])
        store.addOutput { e in
            events.withLock {
                switch e {
                case .file(let n, _): $0.append("put \(n)")
                case .removed(let n): $0.append("rm \(n)")
                case .playlist: $0.append("playlist")
                }
            }
        }
        Self.addSegment(store, 0)
        Self.addSegment(store, 1, discontinuity: true)
        Self.addSegment(store, 2)
        Self.addSegment(store, 3)
        Self.addSegment(store, 4)
        let p = store.snapshot
        #expect(p.complete.map(\.sequence) == [2, 3, 4])
        #expect(p.mediaSequence == 2)
        // Segment 1 carried a discontinuity out of the window: the sequence counts it.
        #expect(p.discontinuitySequence == 1)
        guard case .playlist(let text) = await store.playlist(msn: nil, part: nil) else { Issue.record("no playlist"); return }
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:2"))
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1"))
        #expect(!text.contains("seg1.ts"))
        // Files in the order they were made. A segment out of the playlist stays, served and on
        // disk, for its duration plus the playlist's that listed it (RFC 8216 §6.2.2): segment 0
        // left a playlist of 0, 1, 2 (3 s), so it stays 1 + 3 s; so does segment 1.
        #expect(events.withLock { $0 }.filter { $0.hasPrefix("put") } == (0...4).map { "put seg\($0).ts" })
        #expect(!events.withLock { $0 }.contains { $0.hasPrefix("rm") })
        #expect(await store.resource("seg0.ts")?.data == [0])
        #expect(await store.resource("seg1.ts")?.data == [1])
        #expect(await store.resource("seg9.ts") == nil)
        now.store(3_900_000_000, ordering: .relaxed)
        Self.addSegment(store, 5)
        #expect(!events.withLock { $0 }.contains { $0.hasPrefix("rm") }, "removed before its time")
        #expect(await store.resource("seg0.ts")?.data == [0])
        now.store(4_000_000_000, ordering: .relaxed)
        Self.addSegment(store, 6)
        // Time is up for 0 and 1 (left at 0 s), not for 2 (left at 3.9 s).
        let e = events.withLock { $0 }
        #expect(e.filter { $0.hasPrefix("rm") } == ["rm seg0.ts", "rm seg1.ts"], "\(e)")
        #expect(await store.resource("seg0.ts") == nil)
        #expect(await store.resource("seg1.ts") == nil)
        #expect(await store.resource("seg2.ts")?.data == [2])
    }

    /// A stream back after a silence longer than its window (a rendition nobody watched, an
    /// on-demand source) starts its window again: a new player is not handed the stale edge,
    /// and waits for the first new segment; the stale segments stay fetchable for their time.
    @Test func aStreamBackAfterALongSilenceStartsItsWindowAgain() async {
        let now = Atomic<UInt64>(0)
        let store = HLSStore(settings: Self.settings(.mpegts, count: 3), clock: { now.load(ordering: .relaxed) })
        for i in 0..<4 { Self.addSegment(store, i) }
        // Back within the window's 3 s: a discontinuity, and the window goes on.
        now.store(2_000_000_000, ordering: .relaxed)
        Self.addSegment(store, 4, discontinuity: true)
        #expect(store.snapshot.complete.map(\.sequence) == [2, 3, 4])
        // Back after 20 s: the window starts again with the new segment.
        now.store(22_000_000_000, ordering: .relaxed)
        store.beginSegment(sequence: 5, uri: "seg5.ts", programDateTime: Date(), discontinuity: false, initURI: nil)
        #expect(store.snapshot.segments.map(\.sequence) == [5])
        #expect(await store.playlist(msn: nil, part: nil) == .notYet, "a new player waits for the first new segment")
        #expect(await store.resource("seg4.ts")?.data == [4], "a stale segment is retired, still served")
        store.completeSegment(duration: 1, data: [5])
        guard case .playlist(let text) = await store.playlist(msn: nil, part: nil) else { Issue.record("no playlist"); return }
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:5"), "\(text)")
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1"), "segment 4's discontinuity left the window: \(text)")
        #expect(!text.contains("seg4.ts"))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n"), "the new window begins with a discontinuity: \(text)")
    }

    /// A segment cut without a keyframe (a late one) never heads the window while a later
    /// segment starts with one: Chromium's own HLS player reads the codec from the first listed
    /// segment. A source with no keyframe at all keeps its whole window.
    @Test func noKeyframelessSegmentHeadsTheWindow() {
        let store = HLSStore(settings: Self.settings(.mpegts, count: 3))
        Self.addSegment(store, 0)
        Self.addSegment(store, 1, independent: false)
        Self.addSegment(store, 2)
        Self.addSegment(store, 3)
        // The window would be 1, 2, 3: 1 has no keyframe, so it starts at 2.
        #expect(store.snapshot.complete.map(\.sequence) == [2, 3])
        #expect(store.snapshot.mediaSequence == 2)
        Self.addSegment(store, 4)
        #expect(store.snapshot.complete.map(\.sequence) == [2, 3, 4])
        let none = HLSStore(settings: Self.settings(.mpegts, count: 3))
        for i in 0..<5 { Self.addSegment(none, i, independent: false) }
        #expect(none.snapshot.complete.map(\.sequence) == [2, 3, 4])
    }

    @Test func aLongSegmentRaisesTheTargetDurationAndEndlistEndsIt() async {
        let store = HLSStore(settings: Self.settings(.mpegts, count: 5))
        Self.addSegment(store, 0)
        Self.addSegment(store, 1, duration: 2.4)
        #expect(store.snapshot.targetDuration == 2)
        store.end()
        guard case .playlist(let text) = await store.playlist(msn: nil, part: nil) else { Issue.record("no playlist"); return }
        #expect(text.contains("#EXT-X-TARGETDURATION:2"))
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
    }

    @Test func partsAreHeldOnceAndASegmentOfPartsIsServedWhole() async {
        let store = HLSStore(settings: Self.settings(.lowLatency))
        store.beginSegment(sequence: 0, uri: "seg0.m4s", programDateTime: Date(), discontinuity: false, initURI: "init0.mp4")
        store.addPart(duration: 0.25, independent: true, data: [1, 2], lastArrivalNanos: 0)
        store.addPart(duration: 0.25, independent: false, data: [3], lastArrivalNanos: 0)
        let growing = store.snapshot.segments[0]
        #expect(growing.data.isEmpty, "a segment built from parts holds no second copy of their bytes")
        #expect(growing.parts.count == 2 && !growing.complete)
        #expect(await store.resource("part0.1.m4s")?.data == [3])
        store.completeSegment(duration: 0.5, data: nil)
        #expect(await store.resource("seg0.m4s")?.data == [1, 2, 3])
        guard case .playlist(let text) = await store.playlist(msn: nil, part: nil) else { Issue.record("no playlist"); return }
        #expect(text.contains("#EXT-X-PART:DURATION=0.25") && text.contains("INDEPENDENT=YES"))
        #expect(text.contains("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part1.0.m4s\""))
    }

    @Test(.tags(.exclusive)) func blockingReloadAnswersWhenThePartExistsOrAfterThreeTargetDurations() async throws {
        let store = HLSStore(settings: Self.settings(.lowLatency))
        store.beginSegment(sequence: 0, uri: "seg0.m4s", programDateTime: Date(), discontinuity: false, initURI: nil)
        store.addPart(duration: 0.25, independent: true, data: [0], lastArrivalNanos: 0)
        store.completeSegment(duration: 0.25, data: nil)
        store.beginSegment(sequence: 1, uri: "seg1.m4s", programDateTime: Date(), discontinuity: false, initURI: nil)
        store.addPart(duration: 0.25, independent: true, data: [1], lastArrivalNanos: 0)
        // Asking for the next part waits until it is added.
        let asked = Date()
        async let answer = store.playlist(msn: 1, part: 1)
        try await Task.sleep(for: .milliseconds(150))
        store.addPart(duration: 0.25, independent: false, data: [2], lastArrivalNanos: 0)
        guard case .playlist(let text) = await answer else { Issue.record("no playlist"); return }
        let waited = Date().timeIntervalSince(asked)
        #expect(waited >= 0.14 && waited < 1, "answered after \(waited) s")
        #expect(text.contains("part1.1.m4s"))
        // Too far ahead is a 400; a part that never comes is answered at the timeout (3 × 1 s).
        if case .badRequest = await store.playlist(msn: 5, part: 0) {} else { Issue.record("msn 5 should be refused") }
        let t0 = Date()
        _ = await store.playlist(msn: 2, part: 3)
        let timedOut = Date().timeIntervalSince(t0)
        #expect(timedOut > 2.8 && timedOut < 4, "timed out after \(timedOut) s")
    }

    /// Files and the static playlist reach a place that takes them (a directory, an origin)
    /// from the moment it is added: one part → the part and the playlist.
    @Test func anObserverAddedLaterGetsEachPartAndThePlaylist() {
        let store = HLSStore(settings: Self.settings(.lowLatency))
        store.beginSegment(sequence: 0, uri: "seg0.m4s", programDateTime: Date(), discontinuity: false, initURI: nil)
        store.addPart(duration: 0.25, independent: true, data: [1], lastArrivalNanos: 0)
        let seen = Mutex(0)
        store.addOutput { _ in seen.withLock { $0 += 1 } }
        store.addPart(duration: 0.25, independent: false, data: [2], lastArrivalNanos: 0)
        #expect(seen.withLock { $0 } == 2, "a part and the playlist, once someone observes")
    }

    /// An event playlist lists every segment for ever, but keeps only the newest media in
    /// memory; older segments come from the directory it also writes, if any.
    @Test func anEventPlaylistKeepsItsMemoryBounded() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("liverelay-event-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var settings = Self.settings(.mpegts, count: 3)
        settings.playlist = .event
        settings.directory = dir.path
        let store = HLSStore(settings: settings, eventMemoryBudget: 3_000)
        for i in 0..<20 {
            store.beginSegment(sequence: i, uri: "seg\(i).ts", programDateTime: Date(), discontinuity: false, initURI: nil)
            store.completeSegment(duration: 1, data: [UInt8](repeating: UInt8(i), count: 1_000))
        }
        let p = store.snapshot
        #expect(p.complete.count == 20, "every segment stays listed")
        let inMemory = p.complete.reduce(0) { $0 + $1.data.count }
        #expect(inMemory <= 4_000, "\(inMemory) bytes held")
        #expect(p.complete.filter(\.evicted).count >= 16)
        // An evicted segment: from the directory when it is there, else not found.
        try Data([UInt8](repeating: 0, count: 1_000)).write(to: dir.appendingPathComponent("seg0.ts"))
        #expect(await store.resource("seg0.ts")?.data.count == 1_000)
        #expect(await store.resource("seg1.ts") == nil)
        #expect(await store.resource("seg19.ts")?.data.first == 19)
    }
}
