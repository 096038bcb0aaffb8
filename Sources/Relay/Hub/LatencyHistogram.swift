import Histogram
import Synchronization

/// A latency distribution (HdrHistogram, microseconds, 3 significant digits), shared across
/// threads.
public final class LatencyHistogram: Sendable {
    private let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three))

    public init() {}

    public func record(nanoseconds: UInt64) {
        _ = histogram.withLock { $0.record(min(nanoseconds / 1000, 600_000_000)) }
    }

    public func record(milliseconds: Double) {
        guard milliseconds >= 0 else { return }
        _ = histogram.withLock { $0.record(UInt64(milliseconds * 1000)) }
    }

    /// Percentiles in milliseconds.
    public var summary: LatencySummary {
        histogram.withLock { h in
            guard h.totalCount > 0 else { return LatencySummary(count: 0, p50Ms: nil, p90Ms: nil, p99Ms: nil, maxMs: nil) }
            func ms(_ v: UInt64) -> Double { Double(v) / 1000 }
            return LatencySummary(count: Int(h.totalCount), p50Ms: ms(h.valueAtPercentile(50)), p90Ms: ms(h.valueAtPercentile(90)),
                                  p99Ms: ms(h.valueAtPercentile(99)), maxMs: ms(h.max))
        }
    }

    public func reset() { histogram.withLock { $0.reset() } }
}

public struct LatencySummary: Sendable, Codable, Hashable {
    public var count: Int
    public var p50Ms: Double?
    public var p90Ms: Double?
    public var p99Ms: Double?
    public var maxMs: Double?
}
