public import Foundation

/// A recording file's layout as the recorder wrote it, kept in the catalog beside the segment so
/// that playback and export find every fragment without reading the file: the initialization
/// section's length and SHA-256 (files with the same one can follow one another in a clip), and
/// each fragment's length, its `moof`'s length, its times and whether it begins with a keyframe.
/// Stored as compact bytes (varints); decoding checks every number and gives nil on anything
/// odd (a damaged catalog): the file is then read instead.
public struct SegmentIndex: Sendable, Equatable {
    public var initLength: Int
    public var initHash: String
    /// In file order; each one's offset is the end of the one before (the first: `initLength`).
    public var fragments: [RecordedFragment]

    public init(initLength: Int, initHash: String, fragments: [RecordedFragment]) {
        self.initLength = initLength
        self.initHash = initHash
        self.fragments = fragments
    }

    /// The index of a file read by its boxes.
    public init(_ file: RecordedFileIndex) {
        self.init(initLength: file.initSection.count, initHash: SHA256Stream.hex(file.initSection), fragments: file.fragments)
    }

    static let version: UInt8 = 1

    public func encoded() -> [UInt8] {
        var out: [UInt8] = [Self.version]
        func put(_ v: UInt64) {
            var v = v
            while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
            out.append(UInt8(v))
        }
        func signed(_ v: Int64) { put(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
        func micros(_ s: Double) -> Int64 { Int64(exactly: (s * 1e6).rounded()) ?? 0 }
        put(UInt64(max(0, initLength)))
        out += Self.bytes(hex: initHash)
        put(UInt64(fragments.count))
        var previous: Int64 = 0
        for f in fragments {
            let start = micros(f.start)
            put(UInt64(max(0, f.length)))
            put(UInt64(max(0, f.moofLength)))
            signed(start &- previous)
            put(UInt64(max(0, micros(f.duration))))
            signed(micros(f.earliest) &- start)
            signed(micros(f.latest) &- start)
            out.append(f.keyframe ? 1 : 0)
            previous = start
        }
        return out
    }

    public init?(encoded b: [UInt8]) {
        var at = 0
        func get() -> UInt64? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while at < b.count, shift < 64 {
                let byte = b[at]
                at += 1
                v |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return v }
                shift += 7
            }
            return nil
        }
        func int(_ limit: Int) -> Int? { get().flatMap { $0 <= UInt64(limit) ? Int($0) : nil } }
        func signed() -> Int64? { get().map { Int64(bitPattern: ($0 >> 1) ^ (0 &- ($0 & 1))) } }
        guard b.first == Self.version else { return nil }
        at = 1
        guard let initLength = int(1 << 30), at + 32 <= b.count else { return nil }
        let hash = SHA256Stream.hexString(b[at..<(at + 32)])
        at += 32
        guard let count = int(1 << 22), count <= b.count else { return nil }
        var fragments: [RecordedFragment] = []
        fragments.reserveCapacity(count)
        var offset = initLength
        var previous: Int64 = 0
        for _ in 0..<count {
            guard let length = int(1 << 40), let moof = int(1 << 30), moof <= length, let delta = signed(), let duration = int(1 << 40),
                  let early = signed(), let late = signed(), at < b.count else { return nil }
            let keyframe = b[at] == 1
            at += 1
            let (start, o1) = previous.addingReportingOverflow(delta)
            let (earliest, o2) = start.addingReportingOverflow(early), (latest, o3) = start.addingReportingOverflow(late)
            let (next, o4) = offset.addingReportingOverflow(length)
            guard !o1, !o2, !o3, !o4 else { return nil }
            fragments.append(RecordedFragment(offset: offset, length: length, moofLength: moof, start: Double(start) / 1e6,
                                              duration: Double(duration) / 1e6, earliest: Double(earliest) / 1e6,
                                              latest: Double(latest) / 1e6, keyframe: keyframe))
            offset = next
            previous = start
        }
        guard at == b.count else { return nil }
        self.init(initLength: initLength, initHash: hash, fragments: fragments)
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: continue
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return (out + [UInt8](repeating: 0, count: 32)).prefix(32).map { $0 }
    }
}
