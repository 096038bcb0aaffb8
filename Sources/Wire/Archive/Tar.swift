/// POSIX ustar archives (IEEE Std 1003.1, `pax`'s ustar format): what an evidence bundle is, so
/// that `tar -xf` opens it anywhere. Written member by member while the members stream (each
/// member's size is known before its bytes, at most 8 GiB: the ustar size field), and read back
/// by ``members(length:read:)`` from bytes no one vouches for: every number checked, every
/// member inside what was read.
public enum Tar {
    public static let block = 512
    /// The largest member a ustar header describes: eleven octal digits, 8 GiB − 1.
    public static let largestSize = 0o77777777777

    /// The 512-byte header of a regular file of `size` bytes named `name` (at most 100 bytes
    /// of UTF-8, no NUL), modified at `mtime` (seconds since 1970); nil when the name or the
    /// size (``largestSize``) does not fit.
    public static func header(name: String, size: Int, mtime: Int, mode: Int = 0o644) -> [UInt8]? {
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty, nameBytes.count <= 100, !nameBytes.contains(0), size >= 0, size <= largestSize, mtime >= 0 else { return nil }
        var h = [UInt8](repeating: 0, count: block)
        h.replaceSubrange(0..<nameBytes.count, with: nameBytes)
        func octal(_ value: Int, at offset: Int, width: Int) {
            // width − 1 octal digits, zero-padded, then a NUL.
            let digits = Array(String(value, radix: 8).utf8)
            let padded = [UInt8](repeating: UInt8(ascii: "0"), count: max(0, width - 1 - digits.count)) + digits
            h.replaceSubrange(offset..<(offset + padded.count), with: padded)
        }
        octal(mode, at: 100, width: 8)
        octal(0, at: 108, width: 8)       // uid
        octal(0, at: 116, width: 8)       // gid
        octal(size, at: 124, width: 12)
        octal(mtime, at: 136, width: 12)
        h[156] = UInt8(ascii: "0")        // a regular file
        h.replaceSubrange(257..<263, with: Array("ustar\0".utf8))
        h.replaceSubrange(263..<265, with: Array("00".utf8))
        // The checksum: the header's bytes summed with its own field as eight spaces.
        for i in 148..<156 { h[i] = UInt8(ascii: " ") }
        let sum = h.reduce(0) { $0 + Int($1) }
        let digits = Array(String(sum, radix: 8).utf8)
        let field = [UInt8](repeating: UInt8(ascii: "0"), count: max(0, 6 - digits.count)) + digits + [0, UInt8(ascii: " ")]
        h.replaceSubrange(148..<156, with: field)
        return h
    }

    /// The zero bytes that round a member of `size` bytes up to whole blocks.
    public static func padding(after size: Int) -> [UInt8] {
        let r = size % block
        return r == 0 ? [] : [UInt8](repeating: 0, count: block - r)
    }

    /// The two zero blocks that end an archive.
    public static let end = [UInt8](repeating: 0, count: 2 * block)

    /// An entry of an archive: its name, its type (`0` or NUL: a regular file; anything else a
    /// directory, a link, a pax or GNU extension header…) and where its bytes are.
    public struct Member: Sendable, Equatable {
        public var name: String
        public var offset: Int
        public var size: Int
        public var type: UInt8 = UInt8(ascii: "0")

        public var isRegularFile: Bool { type == UInt8(ascii: "0") || type == 0 }

        /// A name an extractor writes where it says: relative, without a `..` part.
        public var isPlainPath: Bool {
            !name.utf8.isEmpty && name.utf8.first != UInt8(ascii: "/") && !name.split(separator: "/").contains(where: { $0 == ".." })
        }
    }

    public enum ReadError: Error, Equatable, CustomStringConvertible {
        case truncated(at: Int)
        case badHeader(at: Int, String)

        public var description: String {
            switch self {
            case .truncated(let at): return "the archive ends inside the member that starts at byte \(at)"
            case .badHeader(let at, let why): return "the header at byte \(at) is not a tar header: \(why)"
            }
        }
    }

    /// The entries of an archive of `length` bytes, read through `read(offset, count)` (nil:
    /// fewer bytes there), of every type: a reader that trusts only plain files says so.
    public static func members(length: Int, read: (Int, Int) -> [UInt8]?) -> Result<[Member], ReadError> {
        var out: [Member] = []
        var at = 0
        while at + block <= length {
            guard let h = read(at, block), h.count == block else { return .failure(.truncated(at: at)) }
            if h.allSatisfy({ $0 == 0 }) { return .success(out) }
            guard let size = octal(h[124..<136]) else { return .failure(.badHeader(at: at, "its size is not an octal number")) }
            guard let stored = octal(h[148..<156]) else { return .failure(.badHeader(at: at, "its checksum is not an octal number")) }
            var computed = 0
            for (i, b) in h.enumerated() { computed += (148..<156).contains(i) ? Int(UInt8(ascii: " ")) : Int(b) }
            guard stored == computed else { return .failure(.badHeader(at: at, "its checksum does not match")) }
            let nameField = h[0..<100].prefix { $0 != 0 }
            let prefixField = h[345..<500].prefix { $0 != 0 }
            var name = String(decoding: nameField, as: UTF8.self)
            if h[257..<262].elementsEqual(Array("ustar".utf8)), !prefixField.isEmpty { name = String(decoding: prefixField, as: UTF8.self) + "/" + name }
            let (dataStart, o1) = at.addingReportingOverflow(block)
            let (dataEnd, o2) = dataStart.addingReportingOverflow(size)
            guard !o1, !o2, dataEnd <= length else { return .failure(.truncated(at: at)) }
            out.append(Member(name: name, offset: dataStart, size: size, type: h[156]))
            let rounded = size % block == 0 ? size : size + (block - size % block)
            at = dataStart + rounded
        }
        return .success(out)
    }

    /// An octal field: digits, then NULs or spaces; leading spaces allowed.
    static func octal(_ field: ArraySlice<UInt8>) -> Int? {
        var value = 0
        var seen = false
        var ended = false
        for b in field {
            if b == 0 || b == UInt8(ascii: " ") {
                if seen { ended = true }
                continue
            }
            guard !ended, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "7") else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 8)
            let (s, o2) = m.addingReportingOverflow(Int(b - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = s
            seen = true
        }
        return seen ? value : nil
    }
}
