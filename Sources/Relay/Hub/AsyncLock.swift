import Synchronization

/// A lock for async code: one holder at a time, waiters resumed in order; suspends, never
/// blocks a thread. (Stream changes at run time hold it across their awaits.)
public final class AsyncLock: Sendable {
    private let state = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public func lock() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.held { s.held = true; return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    public func unlock() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty { s.held = false; return nil }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
