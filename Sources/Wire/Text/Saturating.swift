/// Numbers a peer or a file controls, converted without a trap.
///
/// Swift traps on `Int64(x)` when `x` is NaN, infinite or out of range, and on `+`/`*` that
/// overflow: one such value from a camera stops every stream in the process. Parser code converts
/// through these helpers only (`scripts/check_peer_input.py` fails the build on the bare forms).
extension FixedWidthInteger {
    /// `value` truncated toward zero and clamped to this type's range; NaN gives 0.
    @inlinable
    public init(saturating value: Double) {
        if value.isNaN { self = 0; return }
        if value <= Double(Self.min) { self = Self.min; return }
        // Double(Self.max) rounds up to 2^bits for 64-bit types: compare with >=.
        if value >= Double(Self.max) { self = Self.max; return }
        self.init(value)
    }

    /// This value within `range`.
    @inlinable
    public func clamped(to range: ClosedRange<Self>) -> Self { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }

    /// `a + b`, clamped to this type's range.
    @inlinable
    public static func saturatingAdd(_ a: Self, _ b: Self) -> Self {
        let (r, o) = a.addingReportingOverflow(b)
        guard o else { return r }
        return b < 0 ? Self.min : Self.max
    }

    /// `a * b`, clamped to this type's range.
    @inlinable
    public static func saturatingMultiply(_ a: Self, _ b: Self) -> Self {
        let (r, o) = a.multipliedReportingOverflow(by: b)
        guard o else { return r }
        return (a < 0) != (b < 0) ? Self.min : Self.max
    }
}

/// Numbers read from text a peer sent: decimal only, within a stated range, or nil.
public enum PeerNumber {
    /// A decimal integer (optional sign, ASCII digits, surrounding spaces allowed) in `range`.
    public static func integer<T: FixedWidthInteger>(_ text: some StringProtocol, in range: ClosedRange<T>) -> T? {
        let t = text.trimmingASCIISpaces()
        guard !t.isEmpty, t.utf8.count <= 40, let v = T(t, radix: 10), range.contains(v) else { return nil }
        return v
    }

    /// A finite decimal number (`60`, `60.5`, `1e3`) in `range`; nil for `inf`, `nan`, hex
    /// floats, and anything outside it.
    public static func decimal(_ text: some StringProtocol, in range: ClosedRange<Double>) -> Double? {
        let t = text.trimmingASCIISpaces()
        guard !t.isEmpty, t.utf8.count <= 64,
              t.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2B || $0 == 0x2D || $0 == 0x65 || $0 == 0x45 }),
              let v = Double(t), v.isFinite, range.contains(v) else { return nil }
        return v
    }

    /// Whole nanoseconds in `seconds`, for a deadline or an interval: 0 for negative or NaN,
    /// `UInt64.max` for infinity or anything too large.
    @inlinable
    public static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(saturating: seconds * 1e9)
    }
}
