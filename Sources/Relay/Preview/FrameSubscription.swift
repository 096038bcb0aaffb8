public import MediaCore
import Synchronization

/// Decoded frames of one stream as an async sequence, under the subscriber's own policy: the
/// in-process Swift API (`RelayEngine.subscribe`). An output like any other: listed by the API,
/// its drops counted. Iterate it from one task; `cancel()` when done.
public final class FrameSubscription: StreamOutput, AsyncSequence, Sendable {
    public typealias Element = Frame
    public let name: String
    public let kind = OutputKind.frames
    public let queue: SinkQueue<Frame>
    private let hub: StreamHub
    private let signal: Signal

    init(hub: StreamHub, name: String, policy: SinkPolicy) {
        self.hub = hub
        self.name = name
        let signal = Signal()
        self.signal = signal
        queue = hub.addFrameQueue(name, policy: policy, notify: { signal.fire() })
        hub.register(self)
    }

    public var status: OutputStatus {
        OutputStatus(name: name, kind: kind, state: queue.isClosed ? .stopped : .running, queue: queue)
    }

    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        queue.setPolicy(policy)
        return true
    }

    public func start() {}
    public func stop() async { queue.close() }

    /// Ends the subscription: iteration ends, decoding stops if nothing else needs it.
    public func cancel() { hub.removeOutput(name) }

    /// The next frame, waiting for one; nil once the subscription or the stream ended.
    public func next() async -> Frame? {
        hub.demand()
        while let frame = await queue.next(signal: signal) {
            // Freshness `clean`: damaged pictures are not handed out (the caller keeps its last).
            if frame.isDamaged, case .clean = queue.policy.freshness {
                queue.dropTaken(.damaged)
                continue
            }
            return frame
        }
        return nil
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: FrameSubscription
        public mutating func next() async -> Frame? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: self) }

    /// One waiter, woken when frames arrive (or the queue closes); a wake-up that comes while
    /// nobody waits is kept for the next wait.
    final class Signal: Sendable {
        private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func fire() {
            let w = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let w = s.waiter { s.waiter = nil; return w }
                s.pending = true
                return nil
            }
            w?.resume()
        }

        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.pending { s.pending = false; return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }
    }
}

extension SinkQueue {
    /// The next item for an async consumer, waiting on `signal` (which the queue's `notify`
    /// fires); nil once the queue is closed.
    func next(signal: FrameSubscription.Signal) async -> Item? {
        while true {
            if let item = pop(timeout: 0) { return item }
            if isClosed { return nil }
            await signal.wait()
        }
    }
}
