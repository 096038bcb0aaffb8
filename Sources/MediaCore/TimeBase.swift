package import CFFmpeg

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
