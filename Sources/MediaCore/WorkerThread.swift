import Foundation
import Synchronization

/// A dedicated thread for blocking work (an FFmpeg read or decode, a file write, an upload):
/// the one thread type every stage uses. Started once; stopped by asking (`requestStop` sets a
/// flag and calls the owner's `wake`, which interrupts FFmpeg or signals a queue); joined with
/// `stop()`, which suspends the caller instead of blocking a cooperative-pool thread.
public final class WorkerThread: Sendable {
    public let name: String
    private let wake: @Sendable () -> Void
    private let stopFlag = Atomic<Bool>(false)
    private let state = Mutex<JoinState>(JoinState())

    struct JoinState {
        var started = false
        var finished = false
        var nextID = 0
        var joiners: [Int: CheckedContinuation<Bool, Never>] = [:]
    }

    /// - Parameters:
    ///   - wake: makes the body notice `isStopRequested` soon (interrupt a blocking call, wake a
    ///     waiting queue). Called from the stopping task, never from the worker thread itself.
    public init(name: String, wake: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.wake = wake
    }

    /// True once a stop was asked for: the body should finish what it holds and return.
    public var isStopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Starts the thread running `body` (at most once; later calls do nothing).
    public func start(_ body: @escaping @Sendable () -> Void) {
        let first = state.withLock { s -> Bool in
            if s.started { return false }
            s.started = true
            return true
        }
        guard first else { return }
        let thread = Thread { [self] in
            body()
            let joiners = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
                s.finished = true
                let j = Array(s.joiners.values)
                s.joiners = [:]
                return j
            }
            for j in joiners { j.resume(returning: true) }
        }
        thread.name = name
        thread.start()
    }

    /// Asks the body to finish and wakes it; does not wait.
    public func requestStop() {
        stopFlag.store(true, ordering: .releasing)
        wake()
    }

    /// Asks the body to finish and waits for the thread to end, at most `timeout` seconds,
    /// without blocking a thread. True when it ended (or never started).
    @discardableResult
    public func stop(timeout: Double = 5) async -> Bool {
        requestStop()
        return await join(timeout: timeout)
    }

    /// Waits for the thread to end, at most `timeout` seconds. True when it ended.
    public func join(timeout: Double) async -> Bool {
        let id: Int? = state.withLock { s in
            if !s.started || s.finished { return nil }
            s.nextID += 1
            return s.nextID
        }
        guard let id else { return true }
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let done = state.withLock { s -> Bool in
                if s.finished { return true }
                s.joiners[id] = c
                return false
            }
            if done { c.resume(returning: true); return }
            // The timer holds no thread while it waits; whichever of it and the thread's end
            // takes the continuation out of `joiners` first resumes it.
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, timeout)) { [self] in
                let c = state.withLock { $0.joiners.removeValue(forKey: id) }
                c?.resume(returning: false)
            }
        }
    }
}
