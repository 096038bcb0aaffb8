/// H.264 bitstream work (H.265's is in `H265`), in one place for every user (the RTSP client's depacketizer, the RTMP
/// ingest, HLS and recording muxers, the wall, and WebRTC next): NAL units in both framings
/// (Annex B start codes, and length prefixes with an `avcC` record), parameter sets, recovery
/// points, `avc1` codec strings. Bytes from a peer: nothing here traps on them.
public enum H264 {
    /// NAL unit types (ITU-T H.264 Table 7-1) LiveRelay looks at.
    public enum NALType {
        public static let slice: UInt8 = 1
        public static let idr: UInt8 = 5
        public static let sei: UInt8 = 6
        public static let sps: UInt8 = 7
        public static let pps: UInt8 = 8
        public static let accessUnitDelimiter: UInt8 = 9
    }

    /// The type of a NAL unit from its first byte.
    @inlinable public static func type(_ header: UInt8) -> UInt8 { header & 0x1F }

    /// Whether a NAL unit of this type is a coded slice (types 1–5).
    @inlinable public static func isSlice(_ type: UInt8) -> Bool { (1...5).contains(type) }

    /// NAL units between Annex B start codes (00 00 01, or 00 00 00 01), as ranges of `b`.
    public static func annexBRanges(_ b: [UInt8]) -> [Range<Int>] {
        var units: [Range<Int>] = []
        var begin: Int? = nil
        var i = 0
        while i + 2 < b.count {
            if b[i + 2] > 1 { i += 3; continue }    // no start code can end within these three bytes
            if b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1 {
                if let s = begin {
                    var e = i
                    while e > s && b[e - 1] == 0 { e -= 1 }    // trailing zeros belong to the next start code
                    units.append(s..<e)
                }
                i += 3
                begin = i
            } else {
                i += 1
            }
        }
        if let s = begin, s < b.count { units.append(s..<b.count) }
        return units
    }

    /// NAL units of a length-prefixed packet (`size`: 1, 2 or 4 bytes per length); a length that
    /// overruns the packet ends it.
    public static func lengthPrefixedRanges(_ b: [UInt8], size: Int) -> [Range<Int>] {
        guard (1...4).contains(size) else { return [] }
        var units: [Range<Int>] = []
        var i = 0
        while i + size <= b.count {
            var n = 0
            for k in 0..<size { n = n << 8 | Int(b[i + k]) }
            i += size
            guard n > 0, n <= b.count - i else { break }
            units.append(i..<i + n)
            i += n
        }
        return units
    }

    /// Whether `b` begins with an Annex B start code (and something after it).
    public static func startsWithStartCode(_ b: [UInt8]) -> Bool {
        b.count > 4 && b[0] == 0 && b[1] == 0 && (b[2] == 1 || (b[2] == 0 && b[3] == 1))
    }

    /// The NAL length-prefix size when a stream's `extradata` is an `avcC` record (its packets
    /// are length-prefixed); nil for Annex B.
    public static func lengthSize(extradata: [UInt8]) -> Int? {
        extradata.count >= 7 && extradata[0] == 1 ? Int(extradata[4] & 3) + 1 : nil
    }

    /// A packet's NAL units, in the framing `lengthSize` says (nil: Annex B).
    public static func units(_ data: [UInt8], lengthSize: Int?) -> [Range<Int>] {
        lengthSize.map { lengthPrefixedRanges(data, size: $0) } ?? annexBRanges(data)
    }

    /// Whether a packet carries a coded picture (a slice NAL unit), framed as `extradata` says.
    public static func hasSlice(_ data: [UInt8], extradata: [UInt8]) -> Bool {
        units(data, lengthSize: lengthSize(extradata: extradata)).contains { !$0.isEmpty && isSlice(type(data[$0.lowerBound])) }
    }

    /// Whether an SEI NAL unit's messages (the bytes after its header) include a recovery point
    /// (payload type 6): where a camera using periodic intra refresh (no IDR after the first)
    /// can be joined. FFmpeg's parser counts it as a keyframe too.
    public static func hasRecoveryPoint(sei: some Collection<UInt8>) -> Bool {
        var it = sei.makeIterator()
        var pending: UInt8? = it.next()
        func next() -> UInt8? {
            defer { pending = it.next() }
            return pending
        }
        func value() -> Int? {
            var v = 0
            while let b = next() {
                v &+= Int(b)
                if b != 0xFF { return v }
                if v > 1 << 24 { return nil }
            }
            return nil
        }
        // Each message: type and size (0xFF runs), then its payload; 0x80 is the trailing bits.
        while let b = pending, b != 0x80 {
            guard let type = value(), let size = value() else { return false }
            if type == 6 { return true }
            var skipped = 0
            while skipped < size, next() != nil { skipped += 1 }
        }
        return false
    }

    /// `avc1.PPCCLL` (profile, constraint flags, level) from a sequence parameter set that
    /// starts with its NAL header; nil when it is too short.
    public static func codecString(sps: [UInt8]) -> String? {
        guard sps.count >= 4 else { return nil }
        return "avc1." + Hex.encode(sps[1...3], uppercase: true)
    }

    /// True when an Annex B access unit carries both a sequence and a picture parameter set
    /// before its first slice (H.264 types 7 and 8; with `hevc`, H.265's 33 and 34): a keyframe
    /// that lost its PPS to the network needs them as much as one that never had them.
    public static func hasParameterSets(annexB d: UnsafeBufferPointer<UInt8>, hevc: Bool = false) -> Bool {
        let n = d.count
        var i = 0
        var sps = false, pps = false
        while i + 3 < n {
            if d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1 {
                let header = d[i + 3]
                let type = hevc ? Int((header >> 1) & 0x3F) : Int(header & 0x1F)
                if type == (hevc ? 33 : 7) { sps = true }
                if type == (hevc ? 34 : 8) { pps = true }
                if sps && pps { return true }
                // Slices come after parameter sets: stop at the first one.
                if hevc ? type < 32 : (type == 1 || type == 5) { return false }
                i += 3
            } else {
                i += 1
            }
        }
        return false
    }

}

/// An `avcC` record (ISO/IEC 14496-15 AVCDecoderConfigurationRecord): how RTMP/FLV and MP4 carry
/// H.264's parameter sets, and the length-prefix size of every NAL unit in the stream.
public struct AVCDecoderConfiguration: Sendable, Equatable {
    /// Bytes of each NAL unit's length prefix (1, 2 or 4).
    public var lengthSize: Int
    public var sps: [[UInt8]]
    public var pps: [[UInt8]]

    /// Nil unless `b` is a whole record (version 1) with a usable length size.
    public init?(parsing b: [UInt8]) {
        guard b.count >= 7, b[0] == 1 else { return nil }
        lengthSize = Int(b[4] & 3) + 1
        guard lengthSize != 3 else { return nil }
        var i = 5
        func sized() -> [UInt8]? {
            guard i + 2 <= b.count else { return nil }
            let n = Int(b[i]) << 8 | Int(b[i + 1])
            i += 2
            guard n > 0, n <= b.count - i else { return nil }
            defer { i += n }
            return Array(b[i..<(i + n)])
        }
        sps = []
        pps = []
        let spsCount = Int(b[i] & 0x1F)
        i += 1
        for _ in 0..<spsCount {
            guard let u = sized() else { return nil }
            sps.append(u)
        }
        guard i < b.count else { return nil }
        let ppsCount = Int(b[i])
        i += 1
        for _ in 0..<ppsCount {
            guard let u = sized() else { return nil }
            pps.append(u)
        }
    }

    /// Every SPS then every PPS, each behind a length of `lengthSize`: what a length-prefixed
    /// keyframe carries in band. Nil when there are none.
    public var lengthPrefixedParameterSets: [UInt8]? {
        var out: [UInt8] = []
        for u in sps + pps {
            for k in stride(from: lengthSize - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: u.count >> (8 * k))) }
            out += u
        }
        return out.isEmpty ? nil : out
    }
}
