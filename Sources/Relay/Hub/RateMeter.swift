import MediaCore
import Synchronization

/// Events per second over the last two seconds.
final class RateMeter: Sendable {
    private let times = Mutex<[UInt64]>([])

    func tick() {
        let now = MonotonicClock.nanoseconds()
        times.withLock { t in
            t.append(now)
            while let f = t.first, now - f > 2_000_000_000 { t.removeFirst() }
        }
    }

    func rate() -> Double {
        let now = MonotonicClock.nanoseconds()
        return times.withLock { t in
            let recent = t.filter { now - $0 <= 2_000_000_000 }
            return Double(recent.count) / 2
        }
    }
}

/// Queues by name, with the list the per-packet path iterates kept ready (rebuilt on change,
/// which is rare, rather than on every packet).
struct SinkSet<Item: QueueItem>: Sendable {
    private(set) var byName: [String: SinkQueue<Item>] = [:]
    private(set) var all: [SinkQueue<Item>] = []

    /// Queues in the order they were added: a packet reaches an earlier queue first (a shared
    /// RTP cut, added before its viewers, has every packet before any of them takes it).
    private var order: [String] = []

    subscript(name: String) -> SinkQueue<Item>? {
        get { byName[name] }
        set {
            if byName[name] == nil, newValue != nil { order.append(name) }
            byName[name] = newValue
            if newValue == nil { order.removeAll { $0 == name } }
            all = order.compactMap { byName[$0] }
        }
    }

    mutating func remove(_ name: String) -> SinkQueue<Item>? {
        let q = byName.removeValue(forKey: name)
        order.removeAll { $0 == name }
        all = order.compactMap { byName[$0] }
        return q
    }
}

/// Bytes in, and bits per second over the last two whole seconds (four 500 ms buckets in a
/// ring): constant work per packet at any packet rate.
final class ByteRateMeter: Sendable {
    fileprivate struct State {
        var bucket: UInt64 = 0
        var counts = [Int](repeating: 0, count: 5)
        var total = 0
    }
    private let state = Mutex(State())
    private static let bucketNanos: UInt64 = 500_000_000

    func add(_ bytes: Int) {
        let b = MonotonicClock.nanoseconds() / Self.bucketNanos
        state.withLock { s in
            s.advance(to: b)
            s.counts[Int(b % 5)] &+= bytes
            s.total &+= bytes
        }
    }

    var total: Int { state.withLock { $0.total } }

    func bitsPerSecond() -> Double {
        let b = MonotonicClock.nanoseconds() / Self.bucketNanos
        return state.withLock { s in
            s.advance(to: b)
            // The four buckets before the current one: two whole seconds.
            let bytes = (1...4).reduce(0) { $0 &+ s.counts[Int((b &+ 5 &- UInt64($1)) % 5)] }
            return Double(bytes) * 8 / 2
        }
    }
}

extension ByteRateMeter.State {
    /// Empties the buckets passed over since the last one written.
    fileprivate mutating func advance(to b: UInt64) {
        guard b != bucket else { return }
        if b > bucket {
            for step in 1...min(5, b - bucket) { counts[Int((bucket + step) % 5)] = 0 }
        }
        bucket = b
    }
}
