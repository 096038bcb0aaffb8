import Histogram
import Wire
import Synchronization

/// A latency distribution (HdrHistogram, microseconds, 3 significant digits from 16 µs up;
/// 60 s and more count as 60 s), shared across threads.
///
/// Every stream has several (each sink's queue, its HLS store, its decoder): 32-bit counts and
/// a 60 s ceiling keep each to 52 KiB, where 64-bit counts up to 600 s took 168 KiB.
public final class LatencyHistogram: Sendable {
    static let ceiling: UInt64 = 60_000_000
    private let histogram = Mutex(Histogram<UInt32>(lowestDiscernibleValue: 16, highestTrackableValue: ceiling, numberOfSignificantValueDigits: .three))

    public init() {}

    public func record(nanoseconds: UInt64) {
        record(microseconds: min(nanoseconds / 1000, Self.ceiling))
    }

    public func record(milliseconds: Double) {
        guard milliseconds >= 0 else { return }
        record(microseconds: min(UInt64(saturating: min(milliseconds, 1e12) * 1000), Self.ceiling))
    }

    private func record(microseconds: UInt64) {
        histogram.withLock { h in
            // Before a 32-bit count could wrap (a year or more of packets): start afresh.
            if h.totalCount >= 1 << 31 { h.reset() }
            h.record(microseconds)
        }
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
