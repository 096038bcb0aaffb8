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
        let ledger = ForwardLedger(destination: destination)
        self.ledger = ledger
        var options = PublishOptions()
        options.caFile = target.caFile
        worker = PacketWorker(handle: handle, work: Forwarding(destination: destination, options: options, handle: handle, backoff: backoff,
                                                               status: ledger, logger: l))
        hub.register(self)
    }

    public func start() { worker.start() }
    public func stop() async { await worker.stop() }

    public var currentStatus: ForwardStatus { ledger.status }
}

/// What a forward tells of itself, whatever carries it: its state, connections, reconnects,
/// packets and bytes sent (and their rate), its last error. Written by its thread, read by the
/// API and `/metrics`.
public final class ForwardLedger: Sendable {
    private let state = Mutex<ForwardStatus>(ForwardStatus())
    private let bytes = ByteRateMeter()

    /// `destination` as it may be shown (its credentials masked here).
    public init(destination: String) {
        state.withLock { $0.destination = Redactor.redact(destination, hideStreamKey: true) }
    }

    public var status: ForwardStatus {
        var s = state.withLock { $0 }
        s.bytesSent = bytes.total
        s.bitrate = bytes.bitsPerSecond()
        return s
    }

    public func connected() { state.withLock { $0.state = .running; $0.connections += 1; $0.lastError = nil } }
    /// One packet sent, in `count` bytes.
    public func sent(_ count: Int) {
        state.withLock { $0.sent += 1 }
        bytes.add(count)
    }
    /// The destination dropped or refused (`reason`, already without credentials): retrying.
    public func failed(_ reason: String) { state.withLock { $0.state = .reconnecting; $0.lastError = reason; $0.reconnects += 1 } }
    public func stopped() { state.withLock { $0.state = .stopped } }
}

/// The forward's connection, confined to its thread.
private final class Forwarding: PacketWork {
    private let destination: String
    private let options: PublishOptions
    private let handle: OutputHandle
    private var queue: SinkQueue<RelayPacket> { handle.queue }
    private let backoff: Backoff
    private let status: ForwardLedger
    private let logger: Logger
    private var publisher: Publisher?
    private var timeline = PacketTimeline()
    private var attempt = 0
    private var nextAttempt = Date.distantPast

    init(destination: String, options: PublishOptions, handle: OutputHandle, backoff: Backoff, status: ForwardLedger, logger: Logger) {
        self.destination = destination
        self.options = options
        self.handle = handle
        self.backoff = backoff
        self.status = status
        self.logger = logger
    }

    func process(_ item: RelayPacket) {
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
            attempt = 0
            // What waited while away is stale: dropped (counted), resume at a keyframe.
            queue.discardAll(.resync)
            status.connected()
            handle.setState(.running)
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
        status.failed(Redactor.scrub(reason))
        handle.report(problem: Redactor.scrub(reason))
        handle.setState(.reconnecting)
        logger.warning("forward: destination down; retrying", metadata: ["error": "\(Redactor.scrub(reason))", "retry_s": "\(delay)"])
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
