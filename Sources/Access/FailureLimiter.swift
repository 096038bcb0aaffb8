import Synchronization

/// Slows down guessing without locking out the innocent: wrong credentials are counted per
/// client and per principal (a user name, the secret behind a publish key, one token), and only
/// that pair is refused once it reaches the limit within the window. Anonymous requests,
/// another user at the same address (behind a NAT or an edge) and the same user elsewhere go on.
///
/// A check that takes time (bcrypt) or whose outcome is learnt later (an SRT caller's
/// passphrase, compared by libsrt in its handshake) reserves its failure first, under the same
/// lock as the limit, and is refunded when it succeeds: parallel guesses meet the limit too.
final class FailureLimiter: Sendable {
    struct Key: Hashable {
        var client: String
        var principal: String
    }
    private struct Window {
        var count: Int
        var since: UInt64
    }
    private struct State {
        var windows: [Key: Window] = [:]
        /// Attempts reserved until their outcome comes, by an id of the attempt (an SRT
        /// caller's address and port).
        var pending: [String: Key] = [:]
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

    /// Failed attempts so far, of every kind (with those reserved and not yet refunded).
    var failures: Int { failureTotal.load(ordering: .relaxed) }
    /// Attempts refused for too many failures.
    var refusals: Int { limitedTotal.load(ordering: .relaxed) }

    /// True when this pair has failed too often lately (and counts the refusal).
    func isLimited(_ key: Key, now: UInt64) -> Bool {
        let limited = state.withLock { s -> Bool in
            guard let w = current(&s, key, now: now) else { return false }
            return w.count >= limit
        }
        if limited { limitedTotal.add(1, ordering: .relaxed) }
        return limited
    }

    func recordFailure(_ key: Key, now: UInt64) {
        state.withLock { s in add(&s, key, 1, now: now) }
    }

    /// Counts an attempt as failed before its outcome is known; false (nothing counted) when
    /// the pair is at its limit. `refund` takes it back once it succeeded.
    func reserve(_ key: Key, now: UInt64) -> Bool {
        let ok = state.withLock { s -> Bool in
            if let w = current(&s, key, now: now), w.count >= limit { return false }
            add(&s, key, 1, now: now)
            return true
        }
        if !ok { limitedTotal.add(1, ordering: .relaxed) }
        return ok
    }

    func refund(_ key: Key, now: UInt64) {
        state.withLock { s in add(&s, key, -1, now: now) }
    }

    /// `reserve`, remembered under `id` until `confirm(id)` refunds it. An id used again keeps
    /// the earlier attempt counted.
    func expect(_ id: String, _ key: Key, now: UInt64) -> Bool {
        guard reserve(key, now: now) else { return false }
        state.withLock { s in
            if s.pending.count < Self.maxEntries { s.pending[id] = key }
        }
        return true
    }

    /// The attempt expected under `id` succeeded.
    func confirm(_ id: String, now: UInt64) {
        guard let key = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
        refund(key, now: now)
    }

    /// The pair's window, nil once it has run out (then forgotten).
    private func current(_ s: inout State, _ key: Key, now: UInt64) -> Window? {
        guard let w = s.windows[key] else { return nil }
        if now &- w.since > windowNanos { s.windows[key] = nil; return nil }
        return w
    }

    private func add(_ s: inout State, _ key: Key, _ n: Int, now: UInt64) {
        if let w = current(&s, key, now: now) {
            let count = max(0, w.count + n)
            if count == 0 && n < 0 { s.windows[key] = nil } else { s.windows[key] = Window(count: count, since: w.since) }
        } else if n > 0 {
            if s.windows.count >= Self.maxEntries {
                // Forget what has expired, then what is not limited: a flood of new names cannot
                // buy a limited pair a clean slate.
                s.windows = s.windows.filter { now &- $0.value.since <= windowNanos }
                if s.windows.count >= Self.maxEntries { s.windows = s.windows.filter { $0.value.count >= limit } }
                if s.windows.count >= Self.maxEntries { s.windows.removeAll() }
            }
            s.windows[key] = Window(count: n, since: now)
        } else {
            return
        }
        failureTotal.add(n, ordering: .relaxed)
    }
}
