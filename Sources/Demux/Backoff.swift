/// Exponential backoff with jitter for reconnecting sources.
public struct Backoff: Sendable, Hashable {
    /// First delay, seconds.
    public var initial: Double = 0.5
    /// Largest delay, seconds.
    public var cap: Double = 10
    public var multiplier: Double = 2
    /// Fraction of the delay drawn at random, up or down (0.2: ±20 %).
    public var jitter: Double = 0.2
    /// A connection that stayed live this long resets the attempt count, seconds.
    public var stableAfter: Double = 60
    /// A connection that stayed live this many times as long as the outage before it also
    /// resets the attempt count: a source live most of the time is not failing. A field unit
    /// live for 20 s between 3 s dropouts starts every dropout at the first delay, while a
    /// source that drops soon after each return keeps backing off.
    public var stableRatio: Double = 3
    /// Give up after this many failed attempts in a row (nil: never, as for cameras).
    public var maxAttempts: Int? = nil

    public init() {}

    public init(initial: Double, cap: Double, multiplier: Double = 2, jitter: Double = 0.2, stableAfter: Double = 60, stableRatio: Double = 3,
                maxAttempts: Int? = nil) {
        self.initial = initial
        self.cap = cap
        self.multiplier = multiplier
        self.jitter = jitter
        self.stableAfter = stableAfter
        self.stableRatio = stableRatio
        self.maxAttempts = maxAttempts
    }

    /// Whether a connection whose media flowed for `live` seconds, after an outage (no media)
    /// of `outage` seconds, starts the attempt count again.
    public func resets(afterLive live: Double, outage: Double) -> Bool {
        live > 0 && (live >= stableAfter || live >= stableRatio * outage)
    }

    /// The wait before attempt `attempt` (1-based), with `unit` a random draw in 0..<1.
    public func delay(attempt: Int, unit: Double) -> Double {
        let exponent = Double(max(0, attempt - 1))
        let base = min(cap, initial * pow(multiplier, exponent))
        let spread = base * jitter * (unit * 2 - 1)
        return max(0, min(cap, base + spread))
    }

    private func pow(_ x: Double, _ y: Double) -> Double {
        var r = 1.0
        var i = 0.0
        while i < y && r < 1e12 { r *= x; i += 1 }
        return r
    }
}
