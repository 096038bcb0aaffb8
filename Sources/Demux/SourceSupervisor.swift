public import MediaCore
import Wire
public import Logging
import Foundation
import Synchronization

/// Where a supervised source stands.
public enum SourceState: Sendable, Hashable, CustomStringConvertible {
    case connecting
    /// Media flows: from a session's first packet (an open alone is not live).
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

    private func run() {
        var schedule = ReconnectSchedule(backoff: backoff, quickRetries: reachability != nil, now: MonotonicClock.nanoseconds())
        var generation = 0
        while !handle.isInterrupted {
            let media = MediaSpan()
            var opened = false
            let session: ReconnectSchedule.Session
            let reason: String
            do {
                let source = try factory(handle)
                generation += 1
                opened = true
                onEvent(.opened(streams: source.streams, formatName: source.formatName, generation: generation))
                try read(source, marking: media)
                onEvent(.closed(error: nil))
                if !reconnectAtEnd {
                    setState(.stopped(reason: "end of stream"))
                    return
                }
                session = ReconnectSchedule.Session(media: media.span, ending: .endOfStream)
                reason = "end of stream"
            } catch {
                let text = Redactor.scrub("\(error)")
                if handle.isInterrupted { break }
                if opened { onEvent(.closed(error: text)) }
                session = ReconnectSchedule.Session(media: media.span, ending: .failure(notServingYet: (error as? IngestError)?.meansNotServingYet ?? false),
                                                    opened: opened)
                reason = text
            }
            let retry = schedule.retry(after: session, at: MonotonicClock.nanoseconds(), unit: Double.random(in: 0..<1))
            if let max = backoff.maxAttempts, retry.attempt > max {
                setState(.stopped(reason: reason))
                return
            }
            setState(.reconnecting(attempt: retry.attempt, lastError: reason))
            if retry.attempt <= 3 || retry.delay > ReconnectSchedule.quickRetry || retry.attempt % 25 == 0 {
                logger.warning("source down; reconnecting", metadata: [
                    "stream.name": "\(name)", "attempt": "\(retry.attempt)", "delay_s": "\(retry.delay)", "error": "\(reason)",
                ])
            }
            if waitForRetry(retry.delay) { schedule.sourceDidNotAnswer(at: MonotonicClock.nanoseconds()) }
        }
        setState(.stopped(reason: "stopped"))
    }

    /// Reads `source` to its end, handing each packet on. The stream is live from its first
    /// packet, not from the open: a server that answers PLAY and sends nothing is not live.
    private func read(_ source: any PacketSource, marking media: MediaSpan) throws {
        if let pushing = source as? any PushingPacketSource {
            // Packets arrive on the producer's thread; this one waits for the end.
            let onEvent = onEvent
            try pushing.deliverAll { [self] packet in
                if media.mark(MonotonicClock.nanoseconds()) { setState(.live) }
                onEvent(.packet(packet))
            }
            return
        }
        let reporting = source as? any LinkHealthReporting
        var nextHealth = MonotonicClock.nanoseconds()
        while let packet = try source.readPacket() {
            let now = MonotonicClock.nanoseconds()
            if media.mark(now) { setState(.live) }
            onEvent(.packet(packet))
            if let reporting, now >= nextHealth {
                nextHealth = now &+ 1_000_000_000
                onEvent(.health(reporting.linkHealth))
            }
        }
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

/// When one session's media flowed: its first and its last packet (monotonic nanoseconds).
/// Marked on whichever thread delivers the packets (a pushing source's), read on the ingest
/// thread once the session ended.
final class MediaSpan: Sendable {
    private let first = Atomic<UInt64>(0)
    private let last = Atomic<UInt64>(0)

    /// Marks a packet that came at `now`; true for the session's first.
    func mark(_ now: UInt64) -> Bool {
        last.store(now, ordering: .releasing)
        guard first.load(ordering: .relaxed) == 0 else { return false }
        return first.compareExchange(expected: 0, desired: now, ordering: .acquiringAndReleasing).exchanged
    }

    /// First to last packet; nil when none came.
    var span: ClosedRange<UInt64>? {
        let f = first.load(ordering: .acquiring)
        guard f != 0 else { return nil }
        return f...max(f, last.load(ordering: .acquiring))
    }
}
