import Testing
import Foundation
import Synchronization
import Demux
import StampedSource
import Logging
import MediaCore
import Mux
import Relay
import TestSupport

/// WebRTC viewers of one stream share one cut into RTP (FFmpeg's packetizer runs once per
/// packet, not once per viewer), each through its own queue: the stamped test source, real
/// FFmpeg packetizers.
@Suite(.ownThreads, .serialized, .tags(.fast)) struct RTPCutTests {
    let logger = Logger(label: "test")

    func live(_ hub: StreamHub) async throws {
        let until = Date().addingTimeInterval(10)
        while hub.latestEpoch == nil, Date() < until { try await Task.sleep(for: .milliseconds(20)) }
        try #require(hub.latestEpoch != nil)
    }

    /// The first RTP packet of each of the next `n` pieces, by RTP timestamp.
    func take(_ feed: RTPFeed, _ n: Int) async -> [UInt32: [UInt8]] {
        var out: [UInt32: [UInt8]] = [:]
        for _ in 0..<n {
            guard let piece = await feed.nextPiece(), let first = piece.datagrams.first else { break }
            let b = first.bytes
            out[UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])] = b
        }
        return out
    }

    /// A source that comes back with other tracks (H.264 for 2 s, then H.265) ends both viewers
    /// of the shared cut at once, the first to take and the one that took nothing for a second;
    /// the next viewer gets a cut of the new tracks.
    @Test func aSourceBackWithOtherTracksEndsEveryViewerOfTheCut() async throws {
        let opens = Atomic<Int>(0)
        // The source comes back only once both viewers are on (a loaded machine can be slow to
        // attach them).
        let attached = Atomic<Bool>(false)
        var opener = SourceOpener()
        opener.register(scheme: "flip", open: { _, interrupt throws(IngestError) in
            let first = opens.add(1, ordering: .relaxed).newValue == 1
            let until = Date().addingTimeInterval(10)
            while !first, !attached.load(ordering: .relaxed), !interrupt.isInterrupted, Date() < until { usleep(10_000) }
            return try TestSource(url: first ? "testsrc://?size=160x96&fps=30&gop=15&frames=60" : "testsrc://?size=160x96&fps=30&gop=15&codec=hevc",
                                  interruptHandle: interrupt)
        }, validate: { _ in nil })
        let hub = StreamHub(name: "flip", source: "flip://", opener: opener, backoff: Backoff(initial: 0.05, cap: 0.1), logger: logger)
        hub.start()
        defer { Task { await hub.stop() } }
        try await live(hub)
        let a = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-a"))
        let b = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-b"))
        attached.store(true, ordering: .relaxed)
        #expect(a.cut === b.cut && a.description.tracks.first?.codecName == "h264")
        // a takes as they come; b waits a second, then takes what its queue kept.
        var fromA = 0, fromB = 0
        let start = Date()
        while await a.nextPiece() != nil, Date().timeIntervalSince(start) < 10 { fromA += 1 }
        let aEnded = Date().timeIntervalSince(start)
        while await b.nextPiece() != nil, Date().timeIntervalSince(start) < 12 { fromB += 1 }
        let bEnded = Date().timeIntervalSince(start)
        #expect(aEnded < 8 && bEnded < 8, "a ended after \(aEnded) s, b after \(bEnded) s")
        #expect(opens.load(ordering: .relaxed) >= 2)
        // b, idle, kept at most a second (its own policy): what it takes of that varies; that it
        // ends with a does not.
        #expect(fromA >= 10, "a took \(fromA) pieces, b \(fromB) (\(b.handle.status.counters))")
        a.finish()
        b.finish()
        let c = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-c"))
        #expect(c.description.tracks.first?.codecName == "hevc", "\(c.description.tracks)")
        #expect(await take(c, 5).count == 5)
        c.finish()
    }

    @Test(.tags(.exclusive)) func viewersShareOneCutEachAtItsOwnPaceAndTheLastToLeaveEndsIt() async throws {
        let hub = StreamHub(name: "cut", source: "testsrc://?size=320x240&fps=30&gop=15", opener: TestSources.opener, logger: logger)
        hub.start()
        defer { Task { await hub.stop() } }
        try await live(hub)
        let a = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-a"))
        let b = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-b"))
        let cut = try #require(a.cut)
        #expect(b.cut === cut)
        #expect(a.description.sdp == b.description.sdp && a.description.tracks.first?.codecName == "h264")
        // The viewers take turns, 60 pictures each: the second finds each one cut.
        var fromA: [UInt32: [UInt8]] = [:], fromB: [UInt32: [UInt8]] = [:]
        for _ in 0..<60 {
            fromA.merge(await take(a, 1)) { x, _ in x }
            fromB.merge(await take(b, 1)) { x, _ in x }
        }
        let both = Set(fromA.keys).intersection(fromB.keys)
        #expect(both.count >= 50, "\(fromA.count) \(fromB.count) \(both.count)")
        // The very same bytes, sequence numbers included: one packetizer made them.
        #expect(both.allSatisfy { fromA[$0] == fromB[$0] })
        let counts = cut.counts
        #expect(counts.cut >= 60 && counts.cut < 90 && counts.failed == 0, "\(counts)")
        // Each viewer is an output of its own, listed, the cut is not.
        #expect(hub.output(named: "webrtc-a") != nil && hub.output(named: "webrtc-b") != nil)
        #expect(hub.outputs.allSatisfy { !$0.name.hasPrefix("rtp-cut") })
        // A viewer that stops taking falls behind its own policy (a second), not the other's.
        try await Task.sleep(for: .milliseconds(2500))
        let late = await take(b, 10)
        #expect(late.count == 10)
        #expect(b.handle.status.counters.droppedTotal > 0, "\(b.handle.status.counters)")
        // The cut stays while anyone views; the last to leave ends it, and the next viewer
        // gets a new one.
        a.finish()
        let c = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-c"))
        #expect(c.cut === cut)
        b.finish()
        c.finish()
        c.finish()
        let d = try #require(try RTPFeed.attachShared(hub: hub, name: "webrtc-d"))
        #expect(d.cut !== cut)
        #expect(await take(d, 5).count == 5)
        d.finish()
    }
}
