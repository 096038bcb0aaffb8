public import Logging
public import Foundation
import MediaCore
public import Demux
import Mux
import Synchronization

/// Pushes the stream, without re-encoding, to another server (RTMP and RTMPS, SRT, RTSP, UDP,
/// RTP, TCP). Reconnects with backoff when the destination drops, resumes at a keyframe, counts
/// what it dropped while away and what it sent, and never slows another sink (its own queue,
/// its own thread).
public final class Forwarder: PacketOutput, ForwardReporting, Sendable {
    public let destination: String
    public let handle: OutputHandle
    private let ledger: ForwardLedger
    private let worker: PacketWorker

    public init(hub: StreamHub, index: Int, target: ForwardTarget, backoff: Backoff = Backoff(), logger: Logger) {
        let destination = target.url
        self.destination = destination
        var l = logger
        l[metadataKey: "forward.destination"] = "\(Redactor.redact(destination, hideStreamKey: true))"
        handle = hub.attachOutput("forward\(index)", kind: .forward, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 300)),
                                  taking: .blocking(batching: false))
        let ledger = ForwardLedger(destination: destination, backoff: backoff)
        self.ledger = ledger
        var options = PublishOptions()
        options.caFile = target.caFile
        worker = PacketWorker(handle: handle, work: Forwarding(destination: destination, options: options, handle: handle, status: ledger, logger: l))
        hub.register(self)
    }

    public func start() { worker.start() }
    public func stop() async { await worker.stop() }

    public var currentStatus: ForwardStatus { ledger.status }
}

/// The forward's connection, confined to its thread.
private final class Forwarding: PacketWork {
    private let destination: String
    private let options: PublishOptions
    private let handle: OutputHandle
    private var queue: SinkQueue<RelayPacket> { handle.queue }
    private let status: ForwardLedger
    private let logger: Logger
    private var publisher: Publisher?
    private var timeline = PacketTimeline()

    init(destination: String, options: PublishOptions, handle: OutputHandle, status: ForwardLedger, logger: Logger) {
        self.destination = destination
        self.options = options
        self.handle = handle
        self.status = status
        self.logger = logger
    }

    func process(_ item: RelayPacket) {
        if publisher == nil {
            guard status.mayConnect, item.isKeyframe else {
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
            status.sent(at.packet.size)
        } catch {
            queue.dropTaken(.resync)
            disconnect(reason: error.description)
        }
    }

    private func connect(_ epoch: IngestEpoch) {
        do {
            publisher = try Publisher(url: destination, streams: epoch.streams, options: options)
            timeline = PacketTimeline()
            // What waited while away is stale: dropped (counted), resume at a keyframe.
            queue.discardAll(.resync)
            status.connected(handle)
            logger.info("forward: connected")
        } catch {
            disconnect(reason: error.description)
        }
    }

    private func disconnect(reason: String?) {
        publisher?.finish()
        publisher = nil
        guard let reason else { return }
        let (delay, said) = status.failed(reason, handle)
        logger.warning("forward: destination down; retrying", metadata: ["error": "\(said)", "retry_s": "\(delay)"])
    }

    func finish() {
        publisher?.finish()
        publisher = nil
        status.stopped()
    }
}

/// A forward of any kind (FFmpeg's muxers here, WebRTC's WHIP in its module): what the API and
/// `/metrics` list under `forwards`.
public protocol ForwardReporting: StreamOutput {
    var currentStatus: ForwardStatus { get }
}

public struct ForwardStatus: Sendable, Codable {
    public var destination = ""
    public var state = OutputState.idle
    public var connections = 0
    public var reconnects = 0
    /// Packets and their bytes sent, over every connection.
    public var sent = 0
    public var bytesSent = 0
    /// Bits per second sent over the last two seconds.
    public var bitrate = 0.0
    public var lastError: String?

    public init() {}
}
