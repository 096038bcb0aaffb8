import Testing
import Foundation
import Synchronization
import Logging
import MediaCore
import Relay
import TestSupport

/// Outputs made around a hub-given handle, with the stamped test source and libx264.
@Suite(.ownThreads, .serialized, .tags(.fast)) struct OutputHandleTests {
    let logger = Logger(label: "test")

    /// An output as a consumer outside `Relay` writes one: a handle, registered.
    final class Viewer: PacketOutput, Sendable {
        let handle: OutputHandle
        init(hub: StreamHub, name: String, policy: SinkPolicy) {
            handle = hub.attachOutput(name, kind: .viewer, policy: policy, taking: .async)
            hub.register(self)
        }
        func start() {}
        func stop() async { handle.queue.close() }
    }

    /// A thread-run output's work: counts what it is given, and whether it finished.
    final class Counting: PacketWork, @unchecked Sendable {
        let seen = Atomic<Int>(0)
        let keyframes = Atomic<Int>(0)
        let finished = Atomic<Bool>(false)
        func process(_ item: RelayPacket) {
            seen.add(1, ordering: .relaxed)
            if item.isKeyframe { keyframes.add(1, ordering: .relaxed) }
        }
        func finish() { finished.store(true, ordering: .relaxed) }
    }

    @Test func anAsyncHandleIsListedTakesPacketsAndEndsWhenDetached() async throws {
        let hub = StreamHub(name: "h", source: "testsrc://?size=320x240&fps=30&gop=15", opener: TestSources.opener, logger: logger)
        let viewer = Viewer(hub: hub, name: "v1", policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100)))
        hub.start()
        var packets = 0, keyframes = 0
        while packets < 45, let p = await viewer.handle.next() {
            packets += 1
            if p.isKeyframe { keyframes += 1 }
        }
        #expect(packets == 45 && keyframes >= 2)
        // Listed by the hub as what it is, with the counters of its queue.
        let listed = try #require(hub.output(named: "v1"))
        #expect(listed.kind == .viewer && listed.status.state == .running)
        // Counted as it went: what was taken was delivered, and a lossless queue read this fast dropped nothing.
        #expect(listed.status.counters.delivered >= packets && listed.status.counters.received >= listed.status.counters.delivered)
        #expect(listed.status.counters.droppedTotal == 0)
        // Its policy switches at run time (keyframe resync kept).
        #expect(hub.setPolicy(SinkPolicy(ordering: .arrival, freshness: .latest(count: 1)), forOutput: "v1") == true)
        #expect(viewer.handle.queue.policy.freshness == .latest(count: 1) && viewer.handle.queue.policy.keyframeResync)
        // Falling behind skips to the next keyframe, counted.
        viewer.handle.fellBehind()
        let next = try #require(await viewer.handle.next())
        #expect(next.isKeyframe)
        // Detached: the hub forgets it, and its takes end once what was queued is taken.
        viewer.handle.detach()
        var left = 0
        while await viewer.handle.next() != nil { left += 1 }
        // The queue holds one now (`latest(count: 1)`): at most that one is left to take.
        #expect(left <= 1)
        #expect(hub.output(named: "v1") == nil)
        #expect(viewer.status.state == .stopped)
        await hub.stop()
    }

    @Test func aWorkerRunsItsWorkOnItsThreadAndFinishesAfterTheHubStops() async throws {
        let hub = StreamHub(name: "w", source: "testsrc://?size=320x240&fps=30&gop=15", opener: TestSources.opener, logger: logger)
        let handle = hub.attachOutput("count", kind: .record, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 300)),
                                      taking: .blocking(batching: true), keepsPolicy: true)
        let work = Counting()
        let worker = PacketWorker(handle: handle, work: work)
        #expect(handle.status.state == .idle)
        worker.start()
        hub.start()
        let deadline = Date().addingTimeInterval(10)
        while work.keyframes.load(ordering: .relaxed) < 3 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(handle.status.state == .running)
        // A batching output, woken by keyframes: it has worked through three keyframe intervals.
        let keyframes = work.keyframes.load(ordering: .relaxed)
        #expect(keyframes >= 3)
        // It keeps its own policy.
        #expect(handle.setPolicy(SinkPolicy(ordering: .arrival, freshness: .latest(count: 1))) == false)
        handle.report(problem: "disk full")
        handle.countError()
        await hub.stop()
        await worker.stop()
        let finished = work.finished.load(ordering: .relaxed)
        #expect(finished)
        let status = handle.status
        #expect(status.state == .stopped && status.lastError == "disk full" && status.errors == 1)
        // Everything the hub gave it was processed before it finished.
        let seen = work.seen.load(ordering: .relaxed)
        #expect(seen == status.counters.delivered && status.queueDepth == 0)
    }
}
