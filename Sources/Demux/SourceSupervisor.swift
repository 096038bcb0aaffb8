public import MediaCore
import Wire
public import Logging
import Foundation
import Synchronization

/// Where a supervised source stands.
public enum SourceState: Sendable, Hashable, CustomStringConvertible {
    case connecting
    case live
    case reconnecting(attempt: Int, lastError: String)
    case stopped(reason: String)

    public var name: String {
        switch self {
        case .connecting: "connecting"
        case .live: "live"
        case .reconnecting: "reconnecting"
        case .stopped: "stopped"
        }
    }

    public var description: String {
        switch self {
        case .connecting, .live: name
        case .reconnecting(let a, let e): "reconnecting (attempt \(a)): \(e)"
        case .stopped(let r): "stopped: \(r)"
        }
    }
}

/// What a supervisor tells its owner, on the ingest thread.
public enum SourceEvent: Sendable {
    /// A (re)connection: the streams found. `generation` counts connections from 1.
    case opened(streams: [StreamInfo], formatName: String, generation: Int)
    case packet(Packet)
    /// The connection ended (nil error: end of stream).
    case closed(error: String?)
    case stateChanged(SourceState)
    /// The link's health (a source that knows it), about once a second while live.
    case health(LinkHealth)
}

/// Keeps one source open on a dedicated thread: opens it, reads packets, and reconnects with
/// backoff when it fails. The thread never blocks longer than the source's deadlines.
public final class SourceSupervisor: Sendable {
    public typealias Factory = @Sendable (InterruptHandle) throws -> any PacketSource

    public let name: String
    private let factory: Factory
    private let backoff: Backoff
    private let reconnectAtEnd: Bool
    private let logger: Logger
    private let onEvent: @Sendable (SourceEvent) -> Void
    private let reachability: Reachability?
    private let handle = InterruptHandle()
    private let stateBox = Mutex<SourceState>(.connecting)
    private let worker: WorkerThread

    /// - Parameters:
    ///   - reconnectAtEnd: reopen when the source ends cleanly (live sources, push ingest);
    ///     false for files, which stop at their end.
    ///   - reachability: a cheap check that the source is back, run between full opens: a source
    ///     that was unreachable is reopened as soon as it answers, not at the end of its backoff.
    public init(name: String, backoff: Backoff = Backoff(), reconnectAtEnd: Bool = true, reachability: Reachability? = nil, logger: Logger,
                factory: @escaping Factory, onEvent: @escaping @Sendable (SourceEvent) -> Void) {
        self.name = name
        self.reachability = reachability
        self.factory = factory
        self.backoff = backoff
        self.reconnectAtEnd = reconnectAtEnd
        self.logger = logger
        self.onEvent = onEvent
        let handle = handle
        // Stopping interrupts whatever FFmpeg call blocks: it returns AVERROR_EXIT at once.
        worker = WorkerThread(name: "ingest:\(name)", wake: { handle.interrupt() })
    }

    public var state: SourceState { stateBox.withLock { $0 } }

    /// Starts the ingest thread (once).
    public func start() {
        worker.start { [self] in self.run() }
    }

    /// Stops the source: the blocked call returns, the thread ends. Waits up to `timeout`
    /// without blocking a thread; true when the thread ended.
    @discardableResult
    public func stop(timeout: Double = 5) async -> Bool {
        await worker.stop(timeout: timeout)
    }

    private func setState(_ s: SourceState) {
        let changed = stateBox.withLock { old -> Bool in
            if old == s { return false }
            old = s
            return true
        }
        if changed { onEvent(.stateChanged(s)) }
    }

    /// How long after a source was last live, or last unreachable, a source whose port answers
    /// but which does not serve yet is retried every `quickRetry` instead of after its backoff.
    public static let bootWindow: Double = 30
    public static let quickRetry: Double = 0.2

    private func run() {
        var attempt = 0
        var generation = 0
        // When the source was last live or last did not answer: a camera booting after either
        // is retried quickly.
        var lastChange = MonotonicClock.nanoseconds()
        while !handle.isInterrupted {
            var lastError: String?
            var booting = false
            var liveSince: UInt64?
            do {
                let source = try factory(handle)
                generation += 1
                onEvent(.opened(streams: source.streams, formatName: source.formatName, generation: generation))
                setState(.live)
                liveSince = MonotonicClock.nanoseconds()
                if let pushing = source as? any PushingPacketSource {
                    // Packets arrive on the producer's thread; this one waits for the end.
                    let onEvent = onEvent
                    try pushing.deliverAll { onEvent(.packet($0)) }
                } else {
                    let reporting = source as? any LinkHealthReporting
                    var nextHealth = MonotonicClock.nanoseconds()
                    while let packet = try source.readPacket() {
                        onEvent(.packet(packet))
                        if let reporting, MonotonicClock.nanoseconds() >= nextHealth {
                            nextHealth = MonotonicClock.nanoseconds() &+ 1_000_000_000
                            onEvent(.health(reporting.linkHealth))
                        }
                    }
                }
                onEvent(.closed(error: nil))
                if !reconnectAtEnd {
                    setState(.stopped(reason: "end of stream"))
                    return
                }
                lastError = "end of stream"
            } catch {
                let text = Redactor.scrub("\(error)")
                if handle.isInterrupted { break }
                booting = (error as? IngestError)?.meansNotServingYet ?? false
                if liveSince != nil { onEvent(.closed(error: text)) }
                lastError = text
            }
            if let since = liveSince, Double(MonotonicClock.nanoseconds() - since) / 1e9 >= backoff.stableAfter {
                attempt = 0
            }
            if liveSince != nil { lastChange = MonotonicClock.nanoseconds() }
            attempt += 1
            if let max = backoff.maxAttempts, attempt > max {
                setState(.stopped(reason: lastError ?? "gave up"))
                return
            }
            let reason = lastError ?? "unknown"
            setState(.reconnecting(attempt: attempt, lastError: reason))
            var wait = backoff.delay(attempt: attempt, unit: Double.random(in: 0..<1))
            // A camera whose port answers while it boots (DESCRIBE refused 404/503, stalled, or
            // an SDP without media) is asked again on a short interval, not after its backoff.
            let sinceChange = Double(MonotonicClock.nanoseconds() &- lastChange) / 1e9
            if booting, reachability != nil, sinceChange < Self.bootWindow { wait = min(wait, Self.quickRetry) }
            if attempt <= 3 || wait > Self.quickRetry || attempt % 25 == 0 {
                logger.warning("source down; reconnecting", metadata: [
                    "stream.name": "\(name)", "attempt": "\(attempt)", "delay_s": "\(wait)", "error": "\(reason)",
                ])
            }
            if waitForRetry(wait) { lastChange = MonotonicClock.nanoseconds() }
        }
        setState(.stopped(reason: "stopped"))
    }

    /// Waits `seconds` before the next full open; with a reachability check, ends the wait as
    /// soon as a source that did not answer answers again (a camera back from a tunnel is seen
    /// within a check interval, whatever its backoff had grown to). A source that answers all
    /// along (it is up, but refused us) waits its whole backoff: no tight loop against it.
    /// True when the source did not answer at some point of the wait.
    @discardableResult
    private func waitForRetry(_ seconds: Double) -> Bool {
        guard let reachability else { sleepInterruptibly(seconds); return false }
        let end = MonotonicClock.nanoseconds() + Timestamps.nanoseconds(seconds)
        var wasDown = false
        while !handle.isInterrupted && MonotonicClock.nanoseconds() < end {
            if reachability.isReachable() {
                if wasDown {
                    logger.info("source answers again; reopening now", metadata: ["stream.name": "\(name)"])
                    return true
                }
            } else {
                wasDown = true
            }
            let left = Double(end &- MonotonicClock.nanoseconds()) / 1e9
            sleepInterruptibly(min(Reachability.interval, max(0, left)))
        }
        return wasDown
    }

    private func sleepInterruptibly(_ seconds: Double) {
        let end = MonotonicClock.nanoseconds() + PeerNumber.nanoseconds(seconds)
        while !handle.isInterrupted {
            let now = MonotonicClock.nanoseconds()
            if now >= end { return }
            usleep(UInt32(min(end - now, 20_000_000) / 1000))
        }
    }
}
