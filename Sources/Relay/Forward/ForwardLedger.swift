public import Demux
import MediaCore
import Synchronization

/// What a forward tells of itself, whatever carries it: its state, connections, reconnects,
/// packets and bytes sent (and their rate), its last error; and when it may try again after a
/// failure (its backoff). Written by its thread, read by the API and `/metrics`.
public final class ForwardLedger: Sendable {
    private let state = Mutex<ForwardStatus>(ForwardStatus())
    private let bytes = ByteRateMeter()
    private let backoff: Backoff
    /// Failures in a row, and when the next attempt may be made.
    private let retry = Mutex<(attempt: Int, next: ContinuousClock.Instant)>((0, .now))

    /// `destination` as it may be shown (its credentials masked here).
    public init(destination: String, backoff: Backoff = Backoff()) {
        self.backoff = backoff
        state.withLock { $0.destination = Redactor.redact(destination, hideStreamKey: true) }
    }

    /// Whether the backoff since the last failure has passed.
    public var mayConnect: Bool { ContinuousClock.now >= retry.withLock { $0.next } }

    /// Connected: running, the backoff starts over.
    public func connected(_ handle: OutputHandle) {
        retry.withLock { $0.attempt = 0 }
        state.withLock { $0.state = .running; $0.connections += 1; $0.lastError = nil }
        handle.setState(.running)
        handle.report(problem: nil)
    }

    /// The destination dropped or refused (`reason`, scrubbed here): reconnecting after the
    /// backoff's next delay, which is returned (seconds).
    @discardableResult
    public func failed(_ reason: String, _ handle: OutputHandle) -> (delay: Double, said: String) {
        let said = Redactor.scrub(reason)
        let delay = retry.withLock { r in
            r.attempt += 1
            let d = backoff.delay(attempt: r.attempt, unit: Double.random(in: 0...1))
            r.next = .now + .milliseconds(Int64(d * 1000))
            return d
        }
        state.withLock { $0.state = .reconnecting; $0.lastError = said; $0.reconnects += 1 }
        handle.report(problem: said)
        handle.setState(.reconnecting)
        return (delay, said)
    }

    public var status: ForwardStatus {
        var s = state.withLock { $0 }
        s.bytesSent = bytes.total
        s.bitrate = bytes.bitsPerSecond()
        return s
    }

    /// One packet sent, in `count` bytes.
    public func sent(_ count: Int) {
        state.withLock { $0.sent += 1 }
        bytes.add(count)
    }
    public func stopped() { state.withLock { $0.state = .stopped } }
}
