import MediaCore
import Synchronization

/// How an output takes its packets.
public enum OutputTaking: Sendable {
    /// On a thread of its own, with `pop(timeout:)` (a `PacketWorker`). A batching output is
    /// woken only for keyframes and long queues: it works a keyframe interval at a time.
    case blocking(batching: Bool)
    /// From a task, with `next()` (a viewer's connection).
    case async
    /// With `pop(timeout: 0)` when `notify` is called (at every packet queued): one thread that
    /// serves many outputs (a stream's SRT readers).
    case notifying(@Sendable () -> Void)
}

/// A packet output's place in a stream, given by the hub (`StreamHub.attachOutput`): the bounded
/// queue the ingest fills under the output's policy, the status the API lists, and the ways
/// to take (blocking on a thread, async from a task, or told to by a thread serving many). An output holds a handle and lives
/// beside its consumer — an RTSP viewer in the RTSP server, a wall tile in the wall's room, the
/// HLS segmenter, the recorder — and registers itself with the hub as a `PacketOutput`.
public final class OutputHandle: Sendable {
    public let name: String
    public let kind: OutputKind
    public let queue: SinkQueue<RelayPacket>
    let hub: StreamHub
    /// Wakes an async taker; nil for a blocking one.
    private let signal: FrameSubscription.Signal?
    private let state = Mutex<OutputState>(.idle)
    private let problem = Mutex<String?>(nil)
    private let errors = Atomic<Int>(0)
    /// The output keeps its own policy (a recording must not lose what it was given).
    public let keepsPolicy: Bool

    init(hub: StreamHub, name: String, kind: OutputKind, policy: SinkPolicy, taking: OutputTaking, keepsPolicy: Bool) {
        self.hub = hub
        self.name = name
        self.kind = kind
        self.keepsPolicy = keepsPolicy
        switch taking {
        case .blocking(let batching):
            signal = nil
            queue = hub.addPacketQueue(name, policy: policy, batching: batching)
        case .notifying(let notify):
            signal = nil
            queue = hub.addPacketQueue(name, policy: policy, notify: notify)
        case .async:
            let s = FrameSubscription.Signal()
            signal = s
            queue = hub.addPacketQueue(name, policy: policy, notify: { s.fire() })
            state.withLock { $0 = .running }
        }
    }

    // MARK: taking

    /// The next packet, waiting at most `timeout` seconds on the caller's thread.
    public func pop(timeout: Double) -> RelayPacket? { queue.pop(timeout: timeout) }

    /// The next packet, waiting for one (an on-demand source is asked for); nil once the output
    /// or the stream ended. One task at a time. A blocking handle has no wake-up for a task: it
    /// answers only what is queued, never holding the task's thread.
    public func next() async -> RelayPacket? {
        guard let signal else { return queue.pop(timeout: 0) }
        hub.demand()
        return await queue.next(signal: signal)
    }

    /// The consumer's connection backed up: skip to the next keyframe (counted `slow_viewer`).
    public func fellBehind(_ reason: DropReason = .slowViewer) { queue.discardAll(reason, always: true) }

    /// Ends the output: the stream forgets it and its queue closes.
    public func detach() { hub.removeOutput(name) }

    // MARK: status

    public var status: OutputStatus {
        let current = queue.isClosed && signal != nil ? .stopped : state.withLock { $0 }
        var s = OutputStatus(name: name, kind: kind, state: current, queue: queue, lastError: problem.withLock { $0 })
        s.errors = errors.load(ordering: .relaxed)
        return s
    }

    public func setState(_ s: OutputState) { state.withLock { $0 = s } }
    /// The output's last problem, for the API (no credentials); nil clears it.
    public func report(problem p: String?) { problem.withLock { $0 = p } }
    /// One more problem (a write error, a refusal), for `/metrics`.
    public func countError() { errors.add(1, ordering: .relaxed) }

    /// Packet outputs keep their resynchronisation at keyframes whatever the policy says.
    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        guard !keepsPolicy else { return false }
        queue.setPacketPolicy(policy)
        return true
    }
}

/// An output that takes packets through a handle: it is listed, and its policy switched,
/// through the handle.
public protocol PacketOutput: StreamOutput {
    var handle: OutputHandle { get }
}

extension PacketOutput {
    public var name: String { handle.name }
    public var kind: OutputKind { handle.kind }
    public var status: OutputStatus { handle.status }
    public func setPolicy(_ policy: SinkPolicy) -> Bool { handle.setPolicy(policy) }
    public var isBatching: Bool { handle.queue.isBatching }
}

extension SinkQueue where Item == RelayPacket {
    /// A packet output's policy: whatever it says, a drop resumes at a keyframe.
    func setPacketPolicy(_ policy: SinkPolicy) {
        var p = policy
        p.keyframeResync = true
        setPolicy(p)
    }
}
