import MediaCore
import Synchronization

/// A packet output that runs on a thread of its own: takes packets from its queue and hands
/// them to `process` until stopped, then lets it `finish`. Subclasses (HLS segmenter, recorder,
/// forwarder) hold their working state confined to that thread.
public class PacketOutputWorker: StreamOutput, @unchecked Sendable {
    // Safety: a subclass's working state is confined to the worker thread; `queue` and
    // `worker` are Sendable; `kind` and `name` are immutable.
    public let queue: SinkQueue<RelayPacket>
    public let name: String
    public let kind: OutputKind
    private let worker: WorkerThread
    private let stateBox = Mutex<OutputState>(.idle)

    init(hub: StreamHub, name: String, kind: OutputKind, policy: SinkPolicy, batching: Bool = false) {
        self.name = name
        self.kind = kind
        let queue = hub.addPacketQueue(name, policy: policy, batching: batching)
        self.queue = queue
        worker = WorkerThread(name: "\(name):\(hub.name)", wake: { queue.wakeConsumer() })
        hub.register(self)
    }

    public func start() {
        // A batching consumer is woken by keyframes and by a long queue (32 packets, about a
        // second at 30 fps): its timeout only takes what a slow trickle left. Each wake-up of a
        // sleeping thread costs ~0.1-0.3 ms of CPU here (caches refilled), so a quiet remuxing
        // stream's segmenter waking 4 times a second was 15 % of its cost.
        let timeout = queue.isBatching ? 1.0 : 0.25
        setState(.running)
        worker.start { [self] in
            while !self.worker.isStopRequested {
                // An output with something due before then (a segment to cut on time) says when.
                let wait = self.wakeWithin.map { min(timeout, max(0.005, $0)) } ?? timeout
                if let item = self.queue.pop(timeout: wait) {
                    self.process(item)
                } else if self.queue.isClosed {
                    // The hub ended its queues (it stops before its outputs do): a closed queue
                    // answers at once, so waiting here for the stop request would spin.
                    break
                } else {
                    self.idle()
                }
            }
            while let item = self.queue.pop(timeout: 0) { self.process(item) }
            self.finish()
            self.setState(.stopped)
        }
    }

    /// Finishes what is in hand (after the hub stopped, so every packet it took is in).
    public func stop() async {
        await worker.stop(timeout: 5)
    }

    public var status: OutputStatus {
        var s = OutputStatus(name: name, kind: kind, state: stateBox.withLock { $0 }, queue: queue, lastError: lastError)
        s.errors = errorCount
        return s
    }

    /// Packet outputs keep their resynchronisation at keyframes whatever the policy says.
    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        queue.setPacketPolicy(policy)
        return true
    }

    public var isBatching: Bool { queue.isBatching }

    func setState(_ s: OutputState) { stateBox.withLock { $0 = s } }

    /// The output's last problem, for the API (no credentials).
    var lastError: String? { nil }
    /// Problems so far (write errors, refusals), for `/metrics`.
    var errorCount: Int { 0 }

    /// Seconds until this output must look at its queue even if nothing woke it (a batching
    /// consumer is woken only by keyframes); nil: no sooner than its usual timeout.
    var wakeWithin: Double? { nil }

    func process(_ item: RelayPacket) {}
    func idle() {}
    func finish() {}
}
