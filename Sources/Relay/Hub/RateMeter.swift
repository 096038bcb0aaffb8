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

    subscript(name: String) -> SinkQueue<Item>? {
        get { byName[name] }
        set { byName[name] = newValue; all = Array(byName.values) }
    }

    mutating func remove(_ name: String) -> SinkQueue<Item>? {
        let q = byName.removeValue(forKey: name)
        all = Array(byName.values)
        return q
    }
}
