import Synchronization
import Foundation
import MediaCore

/// The files a place besides HTTP still has to take (a directory, an origin), oldest first,
/// bounded in count and in bytes. Far behind, what a late reader needs least goes first: LL-HLS
/// parts and superseded playlists, then the oldest segments (each counted as dropped).
/// Items carry ids: the one sent is removed by its id, whatever trimming happened meanwhile.
final class HLSOutputQueue: Sendable {
    struct Item: Sendable {
        let id: UInt64
        let output: HLSOutput
        var bytes: Int {
            switch output {
            case .file(_, let data): data.count
            case .playlist(let text): text.utf8.count
            case .removed: 0
            }
        }
    }

    let maxItems: Int
    let maxBytes: Int
    private let state = Mutex<(items: [Item], nextID: UInt64, bytes: Int)>(([], 0, 0))

    init(maxItems: Int = 200, maxBytes: Int = 64 << 20) {
        self.maxItems = maxItems
        self.maxBytes = maxBytes
    }

    var count: Int { state.withLock { $0.items.count } }
    var bytes: Int { state.withLock { $0.bytes } }
    var first: Item? { state.withLock { $0.items.first } }

    /// Adds a file event; returns how many were dropped to stay within bounds.
    @discardableResult
    func append(_ output: HLSOutput) -> Int {
        state.withLock { s in
            let item = Item(id: s.nextID, output: output)
            s.nextID += 1
            s.items.append(item)
            s.bytes += item.bytes
            guard s.items.count > maxItems || s.bytes > maxBytes else { return 0 }
            let before = s.items.count
            // Late parts and every playlist but the newest go first.
            var sawPlaylist = false
            s.items = s.items.reversed().filter { item in
                switch item.output {
                case .playlist: defer { sawPlaylist = true }; return !sawPlaylist
                case .file(let name, _): return !name.hasPrefix("part")
                case .removed: return true
                }
            }.reversed()
            // Still too much: the oldest segments, which a live reader no longer wants.
            var total = s.items.reduce(0) { $0 + $1.bytes }
            while total > maxBytes, let i = s.items.firstIndex(where: { if case .file = $0.output { true } else { false } }) {
                total -= s.items[i].bytes
                s.items.remove(at: i)
            }
            s.bytes = total
            return before - s.items.count
        }
    }

    func remove(_ id: UInt64) {
        state.withLock { s in
            if let i = s.items.firstIndex(where: { $0.id == id }) {
                s.bytes -= s.items[i].bytes
                s.items.remove(at: i)
            }
        }
    }

    func removeAll() {
        state.withLock { s in s.items.removeAll(); s.bytes = 0 }
    }
}

/// An `HLSOutputQueue` and the thread that delivers it (to a directory, to an origin): the
/// segmenter hands files over and goes on; `deliver` runs here, one file at a time, oldest
/// first, and says whether the file is done, given up, or to be tried again after a pause.
final class HLSDelivery: Sendable {
    enum Outcome: Sendable {
        case done
        case giveUp
        case retry(after: Double)
    }

    let queue: HLSOutputQueue
    private let wake = NSCondition()
    private let worker: WorkerThread

    init(name: String, maxItems: Int, maxBytes: Int) {
        queue = HLSOutputQueue(maxItems: maxItems, maxBytes: maxBytes)
        let wake = wake
        worker = WorkerThread(name: name, wake: { wake.lock(); wake.broadcast(); wake.unlock() })
    }

    /// Queues a file event; returns how many older ones were dropped to stay within bounds.
    @discardableResult
    func handle(_ output: HLSOutput) -> Int {
        let dropped = queue.append(output)
        wake.lock(); wake.signal(); wake.unlock()
        return dropped
    }

    /// Starts the thread. `idle` runs when nothing is queued; `deliver` for each file.
    func start(idle: @escaping @Sendable () -> Void = {}, deliver: @escaping @Sendable (HLSOutput) -> Outcome) {
        worker.start { [self] in
            while true {
                guard let next = queue.first else {
                    if worker.isStopRequested { return }
                    idle()
                    pause(0.5)
                    continue
                }
                switch deliver(next.output) {
                case .done, .giveUp: queue.remove(next.id)
                case .retry(let seconds): pause(seconds)
                }
            }
        }
    }

    private func pause(_ seconds: Double) {
        wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(seconds)); wake.unlock()
    }

    /// Delivers what is queued for up to `timeout` seconds, gives up the rest, and stops.
    func stop(timeout: Double) async {
        worker.requestStop()
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, timeout - 1)) { [self] in
            queue.removeAll()
            worker.requestStop()
        }
        await worker.join(timeout: timeout + 1)
    }
}
