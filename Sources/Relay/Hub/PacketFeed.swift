/// A packet output taken by an async consumer (a wall tile, an RTSP client): its bounded queue
/// under the consumer's policy, the wake-ups of its task, and what every such feed does — resume
/// at keyframes after a drop, skip to the next keyframe when the consumer's connection backs up,
/// leave the stream when cancelled. Subclasses say what a packet becomes.
public class PacketFeed: @unchecked Sendable {
    // Safety: immutable after init; the queue and the signal are thread-safe.
    public let name: String
    public let queue: SinkQueue<RelayPacket>
    let hub: StreamHub
    private let signal: FrameSubscription.Signal

    init(hub: StreamHub, name: String, policy: SinkPolicy) {
        self.hub = hub
        self.name = name
        let signal = FrameSubscription.Signal()
        self.signal = signal
        queue = hub.addPacketQueue(name, policy: policy, notify: { signal.fire() })
    }

    /// Packet outputs keep their resynchronisation at keyframes whatever the policy says.
    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        queue.setPacketPolicy(policy)
        return true
    }

    public func start() {}
    public func stop() async { queue.close() }

    /// Ends the feed: the stream forgets the consumer.
    public func cancel() { hub.removeOutput(name) }

    /// The consumer's connection backed up: skip to the next keyframe (counted `slow_viewer`).
    public func fellBehind() { queue.discardAll(.slowViewer, always: true) }

    /// The next packet, waiting for one (an on-demand source is asked for); nil once the feed or
    /// the stream ended.
    func take() async -> RelayPacket? {
        hub.demand()
        return await queue.next(signal: signal)
    }
}

extension SinkQueue where Item == RelayPacket {
    /// A packet output's policy: whatever it says, a drop resumes at a keyframe.
    func setPacketPolicy(_ policy: SinkPolicy) {
        var p = policy
        p.keyframeResync = true
        setPolicy(p)
    }
}
