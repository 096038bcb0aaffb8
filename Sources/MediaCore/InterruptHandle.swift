import Synchronization
import Wire

/// A flag another thread sets to stop blocking work, plus the deadline of the current blocking
/// call. FFmpeg polls it through the interrupt callback.
public final class InterruptHandle: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let deadlineNanos = Atomic<UInt64>(0)
    private let deadlineFired = Atomic<Bool>(false)

    public init() {}

    /// Asks whatever is blocked to return; sticky.
    public func interrupt() { stopped.store(true, ordering: .releasing) }
    public var isInterrupted: Bool { stopped.load(ordering: .acquiring) }

    /// Arms a deadline `seconds` from now (0 or less: none).
    public func arm(seconds: Double) {
        deadlineFired.store(false, ordering: .relaxed)
        let d: UInt64 = seconds > 0 ? MonotonicClock.nanoseconds() &+ PeerNumber.nanoseconds(seconds) : 0
        deadlineNanos.store(d, ordering: .releasing)
    }

    public func disarm() { deadlineNanos.store(0, ordering: .releasing) }

    /// True when the last armed deadline passed while something polled.
    public var didTimeOut: Bool { deadlineFired.load(ordering: .acquiring) }

    /// What the FFmpeg interrupt callback asks: stop now?
    public func shouldAbort() -> Bool {
        if stopped.load(ordering: .acquiring) { return true }
        let d = deadlineNanos.load(ordering: .acquiring)
        if d != 0 && MonotonicClock.nanoseconds() >= d {
            deadlineFired.store(true, ordering: .releasing)
            return true
        }
        return false
    }
}
