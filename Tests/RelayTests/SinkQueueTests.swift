import Testing
import TestSupport
import Foundation
import Synchronization
import MediaCore
@testable import Relay
import Demux
import Decode

/// A stand-in item with a settable arrival time: the queue's policies are pure logic.
struct Item: QueueItem {
    var arrivalNanos: UInt64
    var presentationTime: Int64?
    var isKeyframe: Bool
}

final class FakeClock: Sendable {
    let now = Atomic<UInt64>(1_000_000_000)
    func advance(ms: UInt64) { now.add(ms * 1_000_000, ordering: .relaxed) }
    var read: @Sendable () -> UInt64 { { self.now.load(ordering: .relaxed) } }
}

@Suite(.ownThreads, .tags(.fast)) struct SinkQueueTests {
    @Test func latestKeepsTheNewestAndCountsQueueFull() {
        let q = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .latest(count: 2)))
        for i in 0..<10 { q.push(Item(arrivalNanos: 0, presentationTime: Int64(i), isKeyframe: false)) }
        #expect(q.pop(timeout: 0)?.presentationTime == 8)
        #expect(q.pop(timeout: 0)?.presentationTime == 9)
        #expect(q.pop(timeout: 0) == nil)
        #expect(q.counters.dropped[.queueFull] == 8)
        #expect(q.counters.delivered == 2)
    }

    @Test func maxAgeDropsWhatIsTooOldWhenTaken() {
        let clock = FakeClock()
        let q = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 100)), clock: clock.read)
        q.push(Item(arrivalNanos: clock.read(), presentationTime: 1, isKeyframe: true))
        clock.advance(ms: 50)
        q.push(Item(arrivalNanos: clock.read(), presentationTime: 2, isKeyframe: false))
        clock.advance(ms: 70) // the first is now 120 ms old, the second 70 ms
        #expect(q.pop(timeout: 0)?.presentationTime == 2)
        #expect(q.counters.dropped[.tooOld] == 1)
    }

    @Test func losslessOverflowResyncsAPacketSinkAtTheNextKeyframe() {
        let q = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 3), keyframeResync: true))
        for i in 0..<4 { q.push(Item(arrivalNanos: 0, presentationTime: Int64(i), isKeyframe: i == 0)) }
        #expect(q.counters.dropped[.queueFull] == 4)
        q.push(Item(arrivalNanos: 0, presentationTime: 4, isKeyframe: false))
        q.push(Item(arrivalNanos: 0, presentationTime: 5, isKeyframe: true))
        q.push(Item(arrivalNanos: 0, presentationTime: 6, isKeyframe: false))
        #expect(q.counters.dropped[.resync] == 1)
        #expect(q.pop(timeout: 0)?.presentationTime == 5)
        #expect(q.takeDiscontinuity())
        #expect(q.pop(timeout: 0)?.presentationTime == 6)
    }

    @Test func arrivalDeliversOutOfOrderAtOnceWhilePresentationReorders() {
        let order: [Int64] = [0, 3, 1, 2, 6, 4, 5, 9, 7, 8]
        let arrival = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100)))
        let presentation = SinkQueue<Item>(policy: SinkPolicy(ordering: .presentation, freshness: .lossless(capacity: 100)), reorderDepth: 2)
        var firstSeen: [Int64] = []
        for pts in order {
            let item = Item(arrivalNanos: 0, presentationTime: pts, isKeyframe: false)
            arrival.push(item)
            presentation.push(item)
            if let a = arrival.pop(timeout: 0) { firstSeen.append(a.presentationTime!) }
        }
        // Arrival: every item leaves the moment it arrives, in arrival order, reorders counted.
        #expect(firstSeen == order)
        #expect(arrival.counters.outOfOrder == 6) // 1, 2, 4, 5, 7, 8 arrive after a later one
        presentation.flushReorder()
        var p: [Int64] = []
        while let x = presentation.pop(timeout: 0) { p.append(x.presentationTime!) }
        #expect(p == Array(0...9))
        #expect(presentation.counters.dropped.isEmpty)
    }

    @Test func switchingPolicyTakesEffectForTheNextItem() {
        let q = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100)))
        for i in 0..<5 { q.push(Item(arrivalNanos: 0, presentationTime: Int64(i), isKeyframe: false)) }
        q.setPolicy(SinkPolicy(ordering: .arrival, freshness: .latest(count: 1)))
        q.push(Item(arrivalNanos: 0, presentationTime: 5, isKeyframe: false))
        #expect(q.pop(timeout: 0)?.presentationTime == 5)
        #expect(q.counters.dropped[.queueFull] == 5)
    }

    /// An async consumer is told (`notify`) instead of a thread being woken, for items and for
    /// the close; it takes with `pop(timeout: 0)`.
    @Test func notifyTellsAnAsyncConsumerOfItemsAndClose() {
        let told = Mutex(0)
        let q = SinkQueue<Item>(policy: .preview, notify: { told.withLock { $0 += 1 } })
        #expect(q.pop(timeout: 0) == nil)
        q.push(Item(arrivalNanos: 0, presentationTime: 42, isKeyframe: false))
        #expect(told.withLock { $0 } == 1)
        #expect(q.pop(timeout: 0)?.presentationTime == 42)
        q.close()
        #expect(told.withLock { $0 } == 2)
        #expect(q.isClosed && q.pop(timeout: 0) == nil)
    }

    /// A batching consumer is not woken per item: items wait for its timeout, except a keyframe
    /// (or a long queue), which wakes it at once. Nothing is lost either way.
    @Test func aBatchingConsumerIsWokenByKeyframesAndAtItsTimeout() {
        let q = SinkQueue<Item>(policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100)))
        q.wakeOnlyForKeyframes()
        func popTimed(_ timeout: Double = 3) -> (Int64?, Double) {
            let t0 = Date()
            let item = q.pop(timeout: timeout)
            return (item?.presentationTime, Date().timeIntervalSince(t0))
        }
        // A non-keyframe: taken at the timeout (~400 ms), not at once — and not lost to it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
            q.push(Item(arrivalNanos: MonotonicClock.nanoseconds(), presentationTime: 1, isKeyframe: false))
        }
        let (first, waited) = popTimed(0.4)
        #expect(first == 1)
        #expect(waited > 0.3 && waited < 1.5, "taken after \(waited) s")
        // A keyframe wakes the consumer at once.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
            q.push(Item(arrivalNanos: MonotonicClock.nanoseconds(), presentationTime: 2, isKeyframe: true))
        }
        let (key, keyWait) = popTimed()
        #expect(key == 2)
        #expect(keyWait < 0.5, "keyframe taken after \(keyWait) s")
        // So does a long queue.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
            for i in 0..<40 { q.push(Item(arrivalNanos: MonotonicClock.nanoseconds(), presentationTime: Int64(10 + i), isKeyframe: false)) }
        }
        let (batch, batchWait) = popTimed()
        #expect(batch == 10)
        #expect(batchWait < 0.5, "long queue taken after \(batchWait) s")
        var rest: [Int64] = []
        while let i = q.pop(timeout: 0.3) { rest.append(i.presentationTime ?? -1) }
        #expect(rest == Array(11..<50))
        #expect(q.counters.delivered == 42)
        #expect(q.counters.dropped.isEmpty)
    }
}

@Suite(.ownThreads, .tags(.fast)) struct HLSPlaylistFormatTests {
    /// Playlist times are formatted by hand (Foundation's formatters were a tenth of a remuxing
    /// stream's CPU): they must match what Foundation writes.
    @Test(arguments: [0.0, 1_795_000_000.5, 1_795_000_000.999, 1_795_000_059.0004, 951_782_400.25, -1.5])
    func programDateTimeMatchesISO8601(seconds: Double) {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let d = Date(timeIntervalSince1970: seconds)
        #expect(HLSPlaylist.iso8601(d) == f.string(from: d))
    }

    @Test(arguments: [0.0, 2.0, 0.2, 0.6, 1.0335, 12.3456, 0.0004, 3.9999])
    func secondsMatchPrintf(value: Double) {
        #expect(HLSPlaylist.seconds3(value) == String(format: "%.3f", value))
    }
}
