import MediaCore

/// What a thread-run packet output does with what it takes. Everything it holds is confined to
/// the worker's thread.
public protocol PacketWork: AnyObject {
    func process(_ item: RelayPacket)
    /// Nothing came within the wait.
    func idle()
    /// The queue is drained after a stop: finish what is in hand (a last segment, a fragment).
    func finish()
    /// Seconds until the work must look at its queue even if nothing woke it (a batching
    /// output is woken only by keyframes); nil: no sooner than the usual timeout.
    var wakeWithin: Double? { get }
}

extension PacketWork {
    public func idle() {}
    public func finish() {}
    public var wakeWithin: Double? { nil }
}

/// A thread that takes a handle's packets and gives them to its work until stopped, then lets
/// it finish.
public final class PacketWorker: @unchecked Sendable {
    // Safety: `work` is used only on the worker thread once started; the rest is Sendable.
    private let handle: OutputHandle
    private let work: any PacketWork
    private let thread: WorkerThread

    public init(handle: OutputHandle, work: any PacketWork) {
        self.handle = handle
        self.work = work
        let queue = handle.queue
        thread = WorkerThread(name: "\(handle.name):\(handle.hub.name)", wake: { queue.wakeConsumer() })
    }

    public func start() {
        // A batching consumer is woken by keyframes and by a long queue (32 packets, about a
        // second at 30 fps): its timeout only takes what a slow trickle left. Each wake-up of a
        // sleeping thread costs ~0.1-0.3 ms of CPU here (caches refilled), so a quiet remuxing
        // stream's segmenter waking 4 times a second was 15 % of its cost.
        let queue = handle.queue
        let timeout = queue.isBatching ? 1.0 : 0.25
        handle.setState(.running)
        thread.start { [self] in
            while !self.thread.isStopRequested {
                // Work with something due before then (a segment to cut on time) says when.
                let wait = self.work.wakeWithin.map { min(timeout, max(0.005, $0)) } ?? timeout
                if let item = queue.pop(timeout: wait) {
                    self.work.process(item)
                } else if queue.isClosed {
                    // The hub ended its queues (it stops before its outputs do): a closed queue
                    // answers at once, so waiting here for the stop request would spin.
                    break
                } else {
                    self.work.idle()
                }
            }
            while let item = queue.pop(timeout: 0) { self.work.process(item) }
            self.work.finish()
            self.handle.setState(.stopped)
        }
    }

    /// Finishes what is in hand (after the hub stopped, so every packet it took is in).
    public func stop() async {
        await thread.stop(timeout: 5)
    }
}
