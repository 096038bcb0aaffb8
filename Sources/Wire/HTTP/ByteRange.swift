/// An HTTP `Range` header (RFC 9110 §14) against a body of known length: one byte range is
/// answered (206); several, or a unit other than bytes, are ignored (200, the whole body), as
/// the RFC allows; a range wholly past the end is unsatisfiable (416).
public enum ByteRange: Equatable, Sendable {
    case whole
    case part(Range<Int>)
    case unsatisfiable

    public static func parse(_ header: Substring?, length: Int) -> ByteRange {
        guard let header, header.utf8.count <= 200 else { return .whole }
        let text = header.trimmingASCIISpaces()
        guard text.hasPrefixIgnoringCase("bytes=") else { return .whole }
        let spec = text.dropFirst(6).trimmingASCIISpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingASCIISpaces(), last = spec[spec.index(after: dash)...].trimmingASCIISpaces()
        if first.isEmpty {
            // bytes=-N: the last N bytes.
            guard let n = PeerNumber.integer(last, in: 0...Int.max) else { return .whole }
            guard n > 0, length > 0 else { return .unsatisfiable }
            return .part(max(0, length - n)..<length)
        }
        guard let a = PeerNumber.integer(first, in: 0...Int.max) else { return .whole }
        guard a < length else { return .unsatisfiable }
        if last.isEmpty { return .part(a..<length) }
        guard let b = PeerNumber.integer(last, in: 0...Int.max), b >= a else { return .whole }
        return .part(a..<(b >= length - 1 ? length : b + 1))
    }
}
