public import Logging
public import Foundation
import MediaCore
public import Demux
import Mux
import Synchronization

/// Pushes the stream, without re-encoding, to another server (RTMP, SRT, RTSP). Reconnects
/// with backoff when the destination drops, resumes at a keyframe, counts what it dropped
/// while away, and never slows another sink (its own queue, its own thread).
public final class Forwarder: PacketOutputWorker, @unchecked Sendable {
    public let destination: String
    private let logger: Logger
    private let backoff: Backoff
    // Confined to the worker thread.
    private var publisher: Publisher?
    private var timeline = PacketTimeline()
    private var attempt = 0
    private var nextAttempt = Date.distantPast
    private let forwardStatus = Mutex<ForwardStatus>(ForwardStatus())

    public init(hub: StreamHub, index: Int, destination: String, backoff: Backoff = Backoff(), logger: Logger) {
        self.destination = destination
        self.backoff = backoff
        var l = logger
        l[metadataKey: "forward.destination"] = "\(Redactor.redact(destination, hideStreamKey: true))"
        self.logger = l
        super.init(hub: hub, name: "forward\(index)", kind: .forward, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 300)))
        forwardStatus.withLock { $0.destination = Redactor.redact(destination, hideStreamKey: true) }
    }

    public var currentStatus: ForwardStatus { forwardStatus.withLock { $0 } }

    override var lastError: String? { forwardStatus.withLock { $0.lastError } }

    override func process(_ item: RelayPacket) {
        if publisher == nil {
            guard Date() >= nextAttempt, item.isKeyframe else {
                queue.dropTaken(.resync) // away: this packet cannot be sent
                return
            }
            connect(item.epoch)
            guard publisher != nil else { queue.dropTaken(.resync); return }
        }
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        if at.newEpoch && at.gapBefore {
            // The source reconnected: its parameters may differ, start a new connection.
            disconnect(reason: nil)
            connect(at.epoch)
        }
        guard let publisher else { return }
        do {
            try publisher.write(at.packet, pts: at.pts, dts: at.dts, duration: at.duration)
            forwardStatus.withLock { $0.sent += 1 }
        } catch {
            queue.dropTaken(.resync)
            disconnect(reason: error.description)
        }
    }

    private func connect(_ epoch: IngestEpoch) {
        do {
            publisher = try Publisher(url: destination, streams: epoch.streams)
            timeline = PacketTimeline()
            attempt = 0
            // What waited while away is stale: dropped (counted), resume at a keyframe.
            queue.discardAll(.resync)
            forwardStatus.withLock { $0.state = .running; $0.connections += 1 }
            setState(.running)
            logger.info("forward: connected")
        } catch {
            disconnect(reason: error.description)
        }
    }

    private func disconnect(reason: String?) {
        publisher?.finish()
        publisher = nil
        guard let reason else { return }
        attempt += 1
        let delay = backoff.delay(attempt: attempt, unit: Double.random(in: 0...1))
        nextAttempt = Date().addingTimeInterval(delay)
        forwardStatus.withLock { $0.state = .reconnecting; $0.lastError = Redactor.scrub(reason); $0.reconnects += 1 }
        setState(.reconnecting)
        logger.warning("forward: destination down; retrying", metadata: ["error": "\(Redactor.scrub(reason))", "retry_s": "\(delay)"])
    }

    override func finish() {
        publisher?.finish()
        publisher = nil
        forwardStatus.withLock { $0.state = .stopped }
    }
}

public struct ForwardStatus: Sendable, Codable {
    public var destination = ""
    public var state = OutputState.idle
    public var connections = 0
    public var reconnects = 0
    public var sent = 0
    public var lastError: String?
}
