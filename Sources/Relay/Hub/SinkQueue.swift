public import MediaCore
import Foundation
import Synchronization

/// What a queue holds: something with an arrival time and a presentation timestamp.
public protocol QueueItem: Sendable {
    var arrivalNanos: UInt64 { get }
    var presentationTime: Int64? { get }
    var isKeyframe: Bool { get }
}

extension Frame: QueueItem {
    public var presentationTime: Int64? { pts }
}

extension Packet: QueueItem {
    /// Packets keep decode order (muxers need it): they are ordered by DTS.
    public var presentationTime: Int64? { dts ?? pts }
}

/// One output's bounded queue with the output's own policies. `push` never blocks and never
/// waits: the ingest (or decode) thread hands an item over and goes on. The output has one way
/// to take items: `pop(timeout:)` on a thread of its own. An async consumer (the in-process
/// `FrameSubscription`) passes `notify` and takes with `pop(timeout: 0)` when told.
public final class SinkQueue<Item: QueueItem>: Sendable {
    struct State {
        var policy: SinkPolicy
        var items = ItemQueue<Item>()
        var reorder: [Item] = []
        var lastPTS: Int64?
        var awaitingKeyframe = false
        var discontinuity = false
        var closed = false
        /// `wakeConsumer` was called: the waiting `pop` returns at once.
        var kicked = false
        var stats = SinkCounters()
        /// Only a keyframe or a long queue wakes a consumer waiting in `pop`.
        var batching = false
    }

    /// Queued items that wake a batching consumer anyway.
    static var batchLimit: Int { 32 }

    private let state: Mutex<State>
    private let condition = NSCondition()
    /// Presentation ordering holds this many frames to put them back in order.
    public let reorderDepth: Int
    private let clock: @Sendable () -> UInt64
    /// Arrival → taken by the sink.
    public let deliveredLatency = LatencyHistogram()
    /// Capture → delivered, for stamped frames (recorded by the sink that reads stamps).
    public let captureLatency = LatencyHistogram()

    /// Called instead of waking a `pop` when items become available or the queue closes.
    private let notify: (@Sendable () -> Void)?

    public init(policy: SinkPolicy, reorderDepth: Int = 4, clock: @escaping @Sendable () -> UInt64 = MonotonicClock.nanoseconds,
                notify: (@Sendable () -> Void)? = nil) {
        state = Mutex(State(policy: policy))
        self.reorderDepth = reorderDepth
        self.clock = clock
        self.notify = notify
    }

    public var policy: SinkPolicy {
        get { state.withLock { $0.policy } }
    }

    /// Switches policies at run time; what is queued is kept as far as the new policy allows.
    public func setPolicy(_ p: SinkPolicy) {
        let released: [Item] = state.withLock { s in
            s.policy = p
            var out: [Item] = []
            if p.ordering == .arrival && !s.reorder.isEmpty {
                out = s.reorder
                s.reorder.removeAll()
            }
            return out
        }
        guard !released.isEmpty else { return }
        let signal = state.withLock { s in released.reduce(false) { enqueue($1, &s) || $0 } }
        if signal { wake() }
    }

    public var counters: SinkCounters { state.withLock { $0.stats } }
    public var depth: Int { state.withLock { $0.items.count } }

    /// Hands an item to the sink. Never blocks; takes the queue's lock once.
    public func push(_ item: Item) {
        let depth = reorderDepth
        let signal = state.withLock { s -> Bool in
            s.stats.received += 1
            guard s.policy.ordering == .presentation else { return enqueue(item, &s) }
            // Hold a few items and release the earliest: strict presentation order.
            s.reorder.append(item)
            var signal = false
            while s.reorder.count > depth {
                var earliest = 0
                for i in s.reorder.indices where (s.reorder[i].presentationTime ?? .min) < (s.reorder[earliest].presentationTime ?? .min) { earliest = i }
                let next = s.reorder.remove(at: earliest)
                signal = enqueue(next, &s) || signal
            }
            return signal
        }
        if signal { wake() }
    }

    /// The source reconnected: its timestamps start again, so earlier ones say nothing about
    /// order any more. Items held for reordering are released first.
    public func restartTimeline() {
        flushReorder()
        state.withLock { $0.lastPTS = nil }
    }

    /// Releases items held for reordering (end of stream).
    public func flushReorder() {
        let signal: Bool = state.withLock { s in
            let held = s.reorder.sorted { ($0.presentationTime ?? .min) < ($1.presentationTime ?? .min) }
            s.reorder.removeAll()
            return held.reduce(false) { enqueue($1, &s) || $0 }
        }
        if signal { wake() }
    }

    /// Queues `item` under the held lock; true when the consumer should be woken.
    private func enqueue(_ item: Item, _ s: inout State) -> Bool {
        let p = s.policy
        // Ordering bookkeeping.
        if let pts = item.presentationTime {
            if let last = s.lastPTS, pts < last {
                if p.ordering == .presentation {
                    s.stats.drop(.late)
                    return false
                }
                s.stats.outOfOrder += 1
            }
            s.lastPTS = max(pts, s.lastPTS ?? pts)
        }
        if s.awaitingKeyframe {
            if !item.isKeyframe { s.stats.drop(.resync); return false }
            s.awaitingKeyframe = false
            s.discontinuity = true
        }
        s.items.append(item)
        let now = clock()
        switch p.freshness {
        case .latest, .clean:
            // `clean` keeps the newest only; whether a picture is clean is the consumer's to
            // judge (it shows that it holds).
            while s.items.count > p.capacity {
                _ = s.items.removeFirst()
                s.stats.drop(.queueFull)
                s.resync()
            }
        case .lossless(let c):
            if s.items.count > max(1, c) {
                // A live source cannot wait: count it and resynchronise at the next keyframe.
                s.stats.drop(.queueFull, count: s.items.count)
                s.items.removeAll()
                s.resync()
            }
        case .maxAge(let ms):
            // Items queue in arrival order: the old ones are at the front.
            let limit = UInt64(max(0, ms)) * 1_000_000
            var old = 0
            while let first = s.items.first, now > first.arrivalNanos && now - first.arrivalNanos > limit {
                _ = s.items.removeFirst()
                old += 1
            }
            if old > 0 { s.stats.drop(.tooOld, count: old); s.resync() }
            if s.items.count > 256 { _ = s.items.removeFirst(); s.stats.drop(.queueFull) }
        }
        if s.items.isEmpty { return false }
        return !s.batching || item.isKeyframe || s.items.count >= Self.batchLimit
    }

    /// For a consumer on a thread of its own that works at keyframes (a segmenter, a recorder):
    /// other items queue without waking it, and `pop` takes them all at its timeout or when a
    /// keyframe (or a long queue) arrives. One wake-up per batch instead of per packet: most of
    /// a remuxing stream's cost was waking up. Set once, before the consumer starts.
    public func wakeOnlyForKeyframes() {
        state.withLock { $0.batching = true }
    }

    /// Takes the next item a sink may use, applying max-age at the moment of taking.
    private func take(_ s: inout State) -> Item? {
        while let item = s.items.removeFirst() {
            if case .maxAge(let ms) = s.policy.freshness {
                let now = clock()
                if now > item.arrivalNanos && now - item.arrivalNanos > UInt64(max(0, ms)) * 1_000_000 {
                    s.stats.drop(.tooOld)
                    s.resync()
                    continue
                }
            }
            s.stats.delivered += 1
            return item
        }
        return nil
    }

    private func recordDelivery(_ item: Item) {
        let now = clock()
        if now > item.arrivalNanos { deliveredLatency.record(nanoseconds: now - item.arrivalNanos) }
    }

    private func wake() {
        if let notify { notify(); return }
        condition.lock(); condition.signal(); condition.unlock()
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The next item, waiting up to `timeout` seconds on this thread; nil on timeout or close.
    /// Items queued without a wake-up (`wakeOnlyForKeyframes`) are taken at the timeout.
    public func pop(timeout: Double) -> Item? {
        // The deadline is only needed to wait: a batch is taken one item per call, with no clock read.
        var deadline: Date?
        if timeout <= 0 {
            let item = state.withLock { take(&$0) }
            if let item { recordDelivery(item) }
            return item
        }
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (item, closed) = state.withLock { s in
                let item = take(&s)
                if item == nil && s.kicked { s.kicked = false; return (nil as Item?, true) }
                return (item, s.closed)
            }
            if let item { recordDelivery(item); return item }
            if closed { return nil }
            let end = deadline ?? Date().addingTimeInterval(timeout)
            deadline = end
            if Date() >= end { return nil }
            _ = condition.wait(until: end)
        }
    }

    /// True once after a resync: the next item follows a gap (HLS writes EXT-X-DISCONTINUITY).
    public func takeDiscontinuity() -> Bool {
        state.withLock { s in
            let d = s.discontinuity
            s.discontinuity = false
            return d
        }
    }

    /// Records that the stream itself dropped something for this sink (decoder behind, corrupt).
    public func countDrop(_ reason: DropReason) {
        state.withLock { $0.stats.drop(reason) }
    }

    /// An item the sink took but could not use (a forward whose destination is away, a frame
    /// that would not encode): counted as dropped instead of delivered, so that received =
    /// delivered + dropped + queued still holds.
    public func dropTaken(_ reason: DropReason) {
        state.withLock { s in
            if s.stats.delivered > 0 { s.stats.delivered -= 1 }
            s.stats.drop(reason)
        }
    }

    /// Drops everything queued (counted under `reason`) and, for a packet sink, resumes at the
    /// next keyframe: what a sink does when it comes back after being away. `always`: resume at
    /// the next keyframe even when nothing was queued (a consumer that learnt it is behind, as a
    /// viewer whose socket backed up).
    public func discardAll(_ reason: DropReason, always: Bool = false) {
        state.withLock { s in
            let n = s.items.count + s.reorder.count
            s.items.removeAll()
            s.reorder.removeAll()
            s.stats.drop(reason, count: n)
            if n > 0 || always { s.resync() }
        }
    }

    /// Whether the consumer is woken only for keyframes (`wakeOnlyForKeyframes`).
    public var isBatching: Bool { state.withLock { $0.batching } }

    /// Wakes a consumer waiting in `pop(timeout:)` now (it returns what is queued, or nil): for an
    /// owner that is stopping it without closing the queue.
    public func wakeConsumer() {
        state.withLock { $0.kicked = true }
        notify?()
        condition.lock(); condition.broadcast(); condition.unlock()
    }

    /// Ends the queue: waiting consumers get nil.
    public func close() {
        state.withLock { $0.closed = true }
        notify?()
        condition.lock(); condition.broadcast(); condition.unlock()
    }
}

extension SinkQueue.State {
    /// After a drop, a packet sink waits for the next keyframe; a frame sink needs not.
    mutating func resync() {
        if policy.keyframeResync { awaitingKeyframe = true }
    }

}

/// What a sink received, delivered and dropped.
public struct SinkCounters: Sendable, Hashable, Codable {
    public var received = 0
    public var delivered = 0
    public var outOfOrder = 0
    public var dropped = DropCounts()
    public init() {}
    public var droppedTotal: Int { dropped.total }
    mutating func drop(_ r: DropReason, count: Int = 1) { dropped.add(r, count) }
}

/// Drops by reason: one counter per `DropReason`, no hashing on the hot path. Encoded as
/// `{"queue_full": 3, …}` with the reasons that happened.
public struct DropCounts: Sendable, Hashable, Codable {
    private var counts = [Int](repeating: 0, count: DropReason.allCases.count)

    public init() {}

    public subscript(reason: DropReason) -> Int { counts[reason.index] }
    public var total: Int { counts.reduce(0, +) }
    public var isEmpty: Bool { total == 0 }
    /// The reasons that happened, by their names (`queue_full`).
    public var byName: [String: Int] {
        var out: [String: Int] = [:]
        for r in DropReason.allCases where counts[r.index] > 0 { out[r.rawValue] = counts[r.index] }
        return out
    }

    mutating func add(_ r: DropReason, _ n: Int) { counts[r.index] &+= n }

    public init(from decoder: any Decoder) throws {
        let named = try [String: Int](from: decoder)
        // A decoder converting keys from snake_case (the API's) hands `queue_full` over as
        // `queueFull`: either spelling names the reason.
        for r in DropReason.allCases {
            if let v = named[r.rawValue] ?? named[Self.camelCased(r.rawValue)] { counts[r.index] = v }
        }
    }

    /// `queue_full` → `queueFull`.
    static func camelCased(_ name: String) -> String {
        let words = name.split(separator: "_")
        guard let first = words.first else { return name }
        return String(first) + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    public func encode(to encoder: any Encoder) throws { try byName.encode(to: encoder) }
}

extension DropReason {
    /// Position in `allCases`, for `DropCounts`.
    var index: Int {
        switch self {
        case .queueFull: 0
        case .tooOld: 1
        case .late: 2
        case .resync: 3
        case .decoderBehind: 4
        case .corrupt: 5
        case .slowViewer: 6
        case .damaged: 7
        case .pageBehind: 8
        }
    }
}

/// A FIFO with O(1) takes from the front (`Array.removeFirst` moved every element: a lossless
/// queue 1 200 deep paid that for each packet). Storage is compacted when the taken part is
/// at least half of it.
struct ItemQueue<Item> {
    private var storage: [Item] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Item? { isEmpty ? nil : storage[head] }

    mutating func append(_ item: Item) { storage.append(item) }

    mutating func removeFirst() -> Item? {
        guard head < storage.count else { return nil }
        let item = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return item
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
    }
}
