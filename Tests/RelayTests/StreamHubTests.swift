import Testing
import Foundation
import Synchronization
import Logging
import MediaCore
import Relay
import Demux
import TestSupport
import StampedSource

/// The hub with real parts: the stamped test source, libx264, libavcodec.
@Suite(.ownThreads, .serialized, .tags(.fast, .exclusive)) struct StreamHubTests {
    let logger = Logger(label: "test")

    /// Frames a consumer thread took, with the monotonic time it took each.
    final class Taken: Sendable {
        let items = Mutex<[(pts: Int64, at: UInt64, counter: UInt32?)]>([])
        func add(_ f: Frame) {
            let c = f.readStamp()?.frameNumber
            items.withLock { $0.append((f.pts ?? -1, MonotonicClock.nanoseconds(), c)) }
        }
        var all: [(pts: Int64, at: UInt64, counter: UInt32?)] { items.withLock { $0 } }
    }

    /// Frames per second over the frames taken between `from` and `to`.
    static func rate(_ t: [(pts: Int64, at: UInt64, counter: UInt32?)], from: UInt64, to: UInt64) -> Double {
        let n = t.filter { $0.at >= from && $0.at < to }.count
        return Double(n) / (Double(to - from) / 1e9)
    }

    static func consume(_ q: SinkQueue<Frame>, into taken: Taken, sleepPerFrame: Double = 0) -> Thread {
        let t = Thread {
            while let f = q.pop(timeout: 10) {
                taken.add(f)
                if sleepPerFrame > 0 { Thread.sleep(forTimeInterval: sleepPerFrame) }
            }
        }
        t.start()
        return t
    }

    @Test func aSlowSinkCostsOnlyItselfAndCountsItsDropsByReason() async throws {
        let hub = StreamHub(name: "slow", source: "testsrc://?size=320x240&fps=30&gop=30", opener: TestSources.opener, logger: logger)
        let fastA = Taken(), fastB = Taken(), slowLatest = Taken(), slowOld = Taken()
        let qa = hub.addFrameQueue("fast-a", policy: SinkPolicy(ordering: .arrival, freshness: .latest(count: 1)))
        let qb = hub.addFrameQueue("fast-b", policy: SinkPolicy(ordering: .presentation, freshness: .lossless(capacity: 30)))
        let qs = hub.addFrameQueue("slow-latest", policy: SinkPolicy(ordering: .arrival, freshness: .latest(count: 2)))
        let qo = hub.addFrameQueue("slow-max-age", policy: SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 100)))
        let packets = hub.attachOutput("packets", kind: .viewer, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 300)), taking: .blocking(batching: false)).queue
        _ = Self.consume(qa, into: fastA)
        _ = Self.consume(qb, into: fastB)
        _ = Self.consume(qs, into: slowLatest, sleepPerFrame: 0.2)
        _ = Self.consume(qo, into: slowOld, sleepPerFrame: 0.2)
        hub.start()
        // Wait for the first frame, then measure four seconds.
        let deadline = Date().addingTimeInterval(10)
        while fastA.all.isEmpty && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(!fastA.all.isEmpty, "no frame decoded within 10 s")
        let from = MonotonicClock.nanoseconds() + 300_000_000
        try await Task.sleep(for: .milliseconds(4300))
        let to = MonotonicClock.nanoseconds()
        let rateA = Self.rate(fastA.all, from: from, to: to)
        let rateB = Self.rate(fastB.all, from: from, to: to)
        let rateSlow = Self.rate(slowLatest.all, from: from, to: to)
        #expect(rateA >= 29, "fast arrival sink got \(rateA) fps")
        #expect(rateB >= 29, "fast presentation sink got \(rateB) fps")
        #expect(rateSlow <= 5.5, "the slow sink took \(rateSlow) fps while sleeping 200 ms per frame")
        await hub.stop()

        // Every frame the slow sinks were given is accounted for: delivered, dropped, or still queued.
        for q in [qs, qo] {
            let c = q.counters
            #expect(c.received == c.delivered + c.droppedTotal + q.depth, "\(c)")
        }
        #expect(qs.counters.dropped[.queueFull] > 50, "\(qs.counters)")
        #expect(qo.counters.dropped[.tooOld] > 50, "\(qo.counters)")
        // The fast sinks dropped nothing and saw the frames in order; the packet sink too.
        #expect(qa.counters.droppedTotal == 0 && qb.counters.droppedTotal == 0)
        #expect(packets.counters.droppedTotal == 0)
        // Stamps read back from the decoded pictures: the frames are the source's frames, in order.
        let counters = fastB.all.compactMap(\.counter)
        #expect(counters.count == fastB.all.count)
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 == $0 + 1 })
    }

    /// A B-frame stream (decode order ≠ presentation order, as from many cameras). FFmpeg's H.264
    /// decoder reorders as deep as the SPS declares even with LOW_DELAY, so frames leave it in
    /// presentation order; neither sink may add delay or lose a picture on top of that.
    @Test func bFramesLeaveTheDecoderInPresentationOrderAndNoSinkHoldsThem() async throws {
        let hub = StreamHub(name: "bframes", source: "testsrc://?size=320x240&fps=30&gop=30&bframes=2&frames=90&realtime=false", opener: TestSources.opener, logger: logger)
        let arrival = Taken(), presentation = Taken()
        let qa = hub.addFrameQueue("arrival", policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 1000)))
        let qp = hub.addFrameQueue("presentation", policy: SinkPolicy(ordering: .presentation, freshness: .lossless(capacity: 1000)))
        hub.start()
        let deadline = Date().addingTimeInterval(20)
        while qa.counters.received < 80 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // Both sinks have everything the decoder produced so far: nothing is held back.
        let received = (qa.counters.received, qp.counters.received)
        await hub.stop()
        #expect(received.0 == received.1)
        while let f = qa.pop(timeout: 0) { arrival.add(f) }
        while let f = qp.pop(timeout: 0) { presentation.add(f) }
        // Only the first run of the source counts: at its end it reconnects and starts at 0 again.
        func firstRun(_ x: [Int64]) -> [Int64] {
            guard let i = x.indices.dropFirst().first(where: { x[$0] == 0 && x[$0 - 1] > 0 }) else { return x }
            return Array(x[..<i])
        }
        let a = firstRun(arrival.all.map(\.pts)), p = firstRun(presentation.all.map(\.pts))
        try #require(a.count >= 80, "only \(a.count) frames decoded")
        #expect(zip(p, p.dropFirst()).allSatisfy { $0 < $1 })
        #expect(a == p)
        #expect(qa.counters.outOfOrder == 0 && qp.counters.droppedTotal == 0)
        // Each picture is the source's: the stamp's frame counter equals the pts.
        #expect(arrival.all.allSatisfy { $0.counter.map(Int64.init) == $0.pts })
    }

    /// The preview encodes JPEGs only while someone asks for them; the decoder keeps going, so
    /// the first viewer gets a current picture at once, not one from before nobody watched.
    @Test func thePreviewEncodesOnlyWhileWatched() async throws {
        let hub = StreamHub(name: "idle", source: "testsrc://?size=320x240&fps=30&gop=30", opener: TestSources.opener, logger: logger)
        var settings = PreviewSettings()
        settings.fps = 30
        let preview = PreviewService(hub: hub, settings: settings)
        preview.start()
        hub.start()
        // Pictures flow (the preview sink takes them) but nobody watches: nothing is encoded.
        let deadline = Date().addingTimeInterval(10)
        while preview.queue.counters.delivered < 30 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try #require(preview.queue.counters.delivered >= 30, "no pictures reached the preview")
        #expect(preview.encodedImages == 0)
        // A viewer: images come at the stream's pace, each from a picture that just arrived.
        var seen: UInt64 = 0
        var ages: [UInt64] = []
        for _ in 0..<15 {
            let image = try #require(await preview.next(after: seen))
            seen = image.sequence
            ages.append(MonotonicClock.nanoseconds() &- image.arrivalNanos)
        }
        #expect(preview.encodedImages >= 15)
        #expect(ages.allSatisfy { $0 < 500_000_000 }, "image ages (ns): \(ages)")
        // The viewer leaves: encoding stops after the demand window.
        try await Task.sleep(for: .milliseconds(Int(PreviewService.demandWindowNanos / 1_000_000) + 300))
        let stopped = preview.encodedImages
        try await Task.sleep(for: .milliseconds(700))
        #expect(preview.encodedImages == stopped)
        // A snapshot is of a current picture, not the last one a viewer saw.
        let snap = try #require(await preview.snapshot(timeout: 3))
        #expect(!snap.isSlate && MonotonicClock.nanoseconds() &- snap.arrivalNanos < 500_000_000)
        #expect(snap.sequence > seen)
        await hub.stop()
        await preview.stop()
    }
    /// A stream only remuxed (classic HLS) from a realtime file lets the file release its
    /// packets at keyframes; anything that needs each packet on time (decoding, a per-packet
    /// sink) takes that back. The segments still come out when their content is complete.
    @Test func aRemuxOnlyFileStreamReleasesAtKeyframesAndItsSegmentsStayOnTime() async throws {
        let dir = Paths.tempDirectory("hubpace")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("clip.ts")
        try TestMedia.writeFile(file, frames: 60, fps: 30, gop: 15)
        var o = SourceOptions()
        o.realtime = true
        o.loop = true
        let hub = StreamHub(name: "pace", source: file.path, sourceOptions: o, logger: logger)
        var h = HLSSettings(variant: .mpegts)
        h.segmentDuration = 0.5
        let hls = HLSSegmenter(hub: hub, settings: h, logger: logger)
        #expect(hub.releasesAtKeyframes)
        hub.addFrameQueue("look", policy: .preview)
        #expect(!hub.releasesAtKeyframes, "decoding needs every packet on time")
        hub.removeOutput("look")
        _ = hub.attachOutput("each", kind: .viewer, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100)), taking: .blocking(batching: false)).queue
        #expect(!hub.releasesAtKeyframes, "a sink woken per packet needs every packet on time")
        hub.removeOutput("each")
        #expect(hub.releasesAtKeyframes)
        #expect(hub.currentStatus.pacing == "keyframes")

        hls.start()
        hub.start()
        // When each segment was first seen complete, against when its content ended.
        var seen: [Int: Date] = [:]
        let until = Date().addingTimeInterval(3.5)
        while Date() < until {
            for s in hls.store.snapshot.complete where seen[s.sequence] == nil { seen[s.sequence] = Date() }
            usleep(5000)
        }
        await hub.stop()
        await hls.stop()
        let segments = hls.store.snapshot.complete.filter { seen[$0.sequence] != nil }
        #expect(segments.count >= 5, "\(segments.count) segments in 3.5 s")
        for s in segments.dropFirst() { // the first was cut before polling began
            let late = seen[s.sequence]!.timeIntervalSince(s.programDateTime) - s.duration
            #expect(abs(s.duration - 0.5) < 0.02, "segment \(s.sequence) lasts \(s.duration) s")
            #expect(late > -0.02 && late < 0.12, "segment \(s.sequence) complete \(late) s after its content ended")
        }
    }
}

/// The in-process Swift API: decoded frames as an async sequence under the subscriber's own
/// policy; an output like any other (listed, counted); cancelling ends decoding when nothing
/// else needs it.
@Suite(.ownThreads, .serialized, .tags(.fast)) struct FrameSubscriptionTests {
    @Test func framesArriveInOrderAndCancellingStopsTheDecoder() async throws {
        let config = try Configuration.parse("streams:\n  cam:\n    source: testsrc://?size=160x96&fps=30&gop=30\n    preview: false", sources: TestSources.opener)
        let engine = RelayEngine(configuration: config, sources: TestSources.opener, logger: Logger(label: "test"))
        let hub = try #require(engine.hubs["cam"])
        let sub = try #require(engine.subscribe(stream: "cam", name: "mine", policy: SinkPolicy(ordering: .presentation, freshness: .lossless(capacity: 100))))
        engine.start()
        var pts: [Int64] = []
        for await frame in sub {
            pts.append(frame.pts ?? -1)
            if pts.count == 20 { break }
        }
        #expect(pts.count == 20 && zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 })
        #expect(hub.outputs.contains { $0.kind == .frames && $0.name == "mine" })
        #expect(hub.outputs.contains { $0.kind == .decode })
        sub.cancel()
        #expect(!hub.outputs.contains { $0.kind == .decode || $0.name == "mine" }, "nothing decodes once the last frame output left")
        await engine.stop()
    }
}
