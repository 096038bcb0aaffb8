package import CFFmpeg
import Wire

/// A rational time base (seconds per tick), as FFmpeg's `AVRational`.
public struct TimeBase: Sendable, Hashable, CustomStringConvertible {
    public var numerator: Int32
    public var denominator: Int32

    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    public static let microseconds = TimeBase(1, 1_000_000)
    public static let milliseconds = TimeBase(1, 1000)
    public static let mpegTS = TimeBase(1, 90_000)

    public var description: String { "\(numerator)/\(denominator)" }

    public var seconds: Double {
        denominator == 0 ? 0 : Double(numerator) / Double(denominator)
    }

    /// Rescales a timestamp from this time base to another, rounding to nearest (`av_rescale_q`).
    public func rescale(_ value: Int64, to other: TimeBase) -> Int64 {
        av_rescale_q(value, rational, other.rational)
    }

    /// The timestamp in seconds.
    public func seconds(_ value: Int64) -> Double { Double(value) * seconds }

    package var rational: AVRational { av_make_q(numerator, denominator) }
    package init(_ r: AVRational) { self.init(r.num, r.den) }
}

/// The "no timestamp" value (`AV_NOPTS_VALUE`), surfaced in Swift as `nil`.
package let noTimestamp: Int64 = lr_nopts_value()

package func optionalTimestamp(_ value: Int64) -> Int64? { value == noTimestamp ? nil : value }

/// Timestamp arithmetic that never traps: input from the network or a file can carry any
/// 64-bit value, and a crash is never the answer to a strange timestamp.
public enum Timestamps {
    /// `Int64(value)`, clamped to ±2^62 (room to add two of them), 0 for NaN.
    public static func int64(_ value: Double) -> Int64 {
        guard value.isFinite else { return value.isNaN ? 0 : (value > 0 ? limit : -limit) }
        if value >= Double(limit) { return limit }
        if value <= -Double(limit) { return -limit }
        return Int64(value)
    }

    /// `a + b`, saturating at the Int64 limits.
    public static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, o) = a.addingReportingOverflow(b)
        return o ? (b > 0 ? .max : .min) : r
    }

    /// `a - b`, saturating at the Int64 limits.
    public static func subtract(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, o) = a.subtractingReportingOverflow(b)
        return o ? (b < 0 ? .max : .min) : r
    }

    /// Nanoseconds from seconds, for a deadline: 0 for negative or NaN, at most ~31 years.
    public static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return seconds == .infinity ? maxNanos : 0 }
        return min(maxNanos, UInt64(saturating: seconds * 1e9))
    }

    static let limit: Int64 = 1 << 62
    static let maxNanos: UInt64 = 1 << 60
}
