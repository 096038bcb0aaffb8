import Synchronization

/// Slows down guessing without locking out the innocent: wrong credentials are counted per
/// client and per principal (a user name, a stream's key, a token), and only that pair is
/// refused once it reaches the limit within the window. Anonymous requests, another user at
/// the same address (behind a NAT or an edge) and the same user elsewhere go on.
///
/// Attempts whose outcome is learnt later (an SRT caller's passphrase, checked by libsrt in its
/// handshake) wait as pending; one not confirmed before its deadline counts as a failure.
final class FailureLimiter: Sendable {
    struct Key: Hashable {
        var client: String
        var principal: String
    }
    private struct Window {
        var count: Int
        var since: UInt64
    }
    private struct Pending {
        var key: Key
        var deadline: UInt64
    }
    private struct State {
        var windows: [Key: Window] = [:]
        /// By an id of the attempt (an SRT caller's address and port).
        var pending: [String: Pending] = [:]
    }
    private let state = Mutex(State())
    let limit: Int
    let windowNanos: UInt64
    private let failureTotal = Atomic<Int>(0)
    private let limitedTotal = Atomic<Int>(0)
    /// Bounded: a flood of distinct clients or names forgets the oldest, never grows for ever.
    static let maxEntries = 10_000

    init(limit: Int, windowNanos: UInt64) {
        self.limit = limit
        self.windowNanos = windowNanos
    }

    /// Failed attempts so far, of every kind.
    var failures: Int { failureTotal.load(ordering: .relaxed) }
    /// Attempts refused for too many failures.
    var refusals: Int { limitedTotal.load(ordering: .relaxed) }

    /// True when this pair has failed too often lately (and counts the refusal).
    func isLimited(_ key: Key, now: UInt64) -> Bool {
        let limited = state.withLock { s -> Bool in
            settle(&s, now: now)
            guard let w = s.windows[key] else { return false }
            if now &- w.since > windowNanos { s.windows[key] = nil; return false }
            return w.count >= limit
        }
        if limited { limitedTotal.add(1, ordering: .relaxed) }
        return limited
    }

    func recordFailure(_ key: Key, now: UInt64) {
        state.withLock { s in fail(&s, key, now: now) }
    }

    /// An attempt whose outcome comes later: a failure unless `confirm(id)` comes before `deadline`.
    func expect(_ id: String, _ key: Key, deadline: UInt64, now: UInt64) {
        state.withLock { s in
            settle(&s, now: now)
            if s.pending.count >= Self.maxEntries { s.pending.removeAll() }
            s.pending[id] = Pending(key: key, deadline: deadline)
        }
    }

    /// The attempt `id` succeeded.
    func confirm(_ id: String, now: UInt64) {
        state.withLock { s in
            settle(&s, now: now)
            s.pending[id] = nil
        }
    }

    /// Pending attempts past their deadline become failures.
    private func settle(_ s: inout State, now: UInt64) {
        guard !s.pending.isEmpty else { return }
        let late = s.pending.filter { $0.value.deadline <= now }
        for (id, p) in late {
            s.pending[id] = nil
            fail(&s, p.key, now: now)
        }
    }

    private func fail(_ s: inout State, _ key: Key, now: UInt64) {
        failureTotal.add(1, ordering: .relaxed)
        if s.windows.count >= Self.maxEntries {
            // Forget what has expired, then what is not limited: a flood of new names cannot
            // buy a limited pair a clean slate.
            s.windows = s.windows.filter { now &- $0.value.since <= windowNanos }
            if s.windows.count >= Self.maxEntries { s.windows = s.windows.filter { $0.value.count >= limit } }
            if s.windows.count >= Self.maxEntries { s.windows.removeAll() }
        }
        if let w = s.windows[key], now &- w.since <= windowNanos {
            s.windows[key] = Window(count: w.count + 1, since: w.since)
        } else {
            s.windows[key] = Window(count: 1, since: now)
        }
    }
}
