/// Searching and trimming text a peer controls, with the standard library on UTF-8 only.
///
/// Foundation's `range(of:)`, `contains`, `replacingOccurrences` and friends stopped this
/// process on Linux once ("String index is out of bounds" on text holding invalid UTF-8, via
/// the Redactor). Parser code uses these instead; `scripts/check_peer_input.py` fails the test
/// run on the Foundation forms anywhere in the product's sources.
extension StringProtocol {
    /// The first occurrence of `needle`, compared byte by byte. Matches of valid UTF-8 start
    /// and end on scalar boundaries.
    public func utf8Range(of needle: some StringProtocol) -> Range<Index>? {
        let n = Array(needle.utf8)
        guard let first = n.first else { return nil }
        let u = utf8
        var i = u.startIndex
        while i != u.endIndex {
            if u[i] == first {
                var j = u.index(after: i), k = 1
                while k < n.count, j != u.endIndex, u[j] == n[k] { j = u.index(after: j); k += 1 }
                if k == n.count { return i..<j }
            }
            i = u.index(after: i)
        }
        return nil
    }

    /// True when `needle` occurs, compared byte by byte.
    public func utf8Contains(_ needle: some StringProtocol) -> Bool { utf8Range(of: needle) != nil }

    /// True when `needle` occurs, ASCII letters compared without case.
    public func utf8ContainsIgnoringCase(_ needle: some StringProtocol) -> Bool {
        let n = Array(needle.utf8).map(asciiLower)
        guard !n.isEmpty else { return true }
        let h = Array(utf8)
        guard h.count >= n.count else { return false }
        var i = 0
        while i + n.count <= h.count {
            var k = 0
            while k < n.count, asciiLower(h[i + k]) == n[k] { k += 1 }
            if k == n.count { return true }
            i += 1
        }
        return false
    }

    /// True when this starts with `prefix`, ASCII letters compared without case.
    public func hasPrefixIgnoringCase(_ prefix: some StringProtocol) -> Bool {
        var a = utf8.makeIterator()
        for b in prefix.utf8 {
            guard let x = a.next(), asciiLower(x) == asciiLower(b) else { return false }
        }
        return true
    }

    /// Equal to `other` with ASCII letters compared without case.
    public func equalsIgnoringCase(_ other: some StringProtocol) -> Bool {
        utf8.count == other.utf8.count && hasPrefixIgnoringCase(other)
    }

    /// Without leading and trailing spaces, tabs, CR and LF.
    public func trimmingASCIISpaces() -> Substring {
        let s = substring
        let u = s.utf8
        var lo = u.startIndex, hi = u.endIndex
        while lo != hi, isSpace(u[lo]) { lo = u.index(after: lo) }
        while hi != lo, isSpace(u[u.index(before: hi)]) { hi = u.index(before: hi) }
        // Spaces are ASCII: the bounds sit on scalar boundaries.
        return s[lo..<hi]
    }

    /// Every occurrence of `target` replaced, searched byte by byte.
    public func replacingAll(_ target: some StringProtocol, with replacement: some StringProtocol) -> String {
        guard !target.isEmpty else { return String(self) }
        var out = ""
        var rest = self[...]
        while let r = rest.utf8Range(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        out += rest
        return out
    }

    /// The field at `index` of a split, or nil when there are fewer (never traps).
    public func field(_ index: Int, separator: Character, omittingEmpty: Bool = true) -> Substring? {
        guard index >= 0 else { return nil }
        let parts = substring.split(separator: separator, omittingEmptySubsequences: omittingEmpty)
        return index < parts.count ? parts[index] : nil
    }

    /// This text as a `Substring` (no copy when it is one, or a `String`).
    var substring: Substring {
        if let s = self as? Substring { return s }
        if let s = self as? String { return s[...] }
        return String(self)[...]
    }
}

@inline(__always) func asciiLower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
@inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
