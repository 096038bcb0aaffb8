/// H.264 as WebCodecs takes it without a `description`: Annex B access units, each keyframe
/// carrying its SPS and PPS, and the codec string (`avc1.PPCCLL`) read off the SPS.
///
/// Demuxers hand H.264 over in two forms: Annex B with parameter sets out of band (RTSP's
/// `sprop-parameter-sets`, MPEG-TS) or length-prefixed with an `avcC` record (RTMP/FLV, MP4).
/// Both become Annex B here, without touching a slice.
public struct H264AnnexB: Sendable {
    /// Bytes of each NAL unit's length prefix; nil for Annex B input.
    public private(set) var lengthSize: Int?
    public private(set) var sps: [UInt8]?
    public private(set) var pps: [[UInt8]] = []

    /// From a stream's extradata: an `avcC` record, Annex B parameter sets, or nothing.
    public init(extradata: [UInt8]) {
        if extradata.count >= 7 && extradata[0] == 1 {
            lengthSize = Int(extradata[4] & 3) + 1
            var i = 5
            let spsCount = Int(extradata[i] & 0x1F); i += 1
            for _ in 0..<spsCount {
                guard let unit = Self.sized(extradata, &i) else { return }
                if sps == nil { sps = unit }
            }
            guard i < extradata.count else { return }
            let ppsCount = Int(extradata[i]); i += 1
            for _ in 0..<ppsCount {
                guard let unit = Self.sized(extradata, &i) else { return }
                pps.append(unit)
            }
        } else {
            lengthSize = nil
            for unit in Self.annexBUnits(extradata) { learn(unit) }
        }
    }

    /// `avc1.PPCCLL` from the SPS (profile, constraint flags, level); nil before an SPS is known.
    public var codec: String? {
        guard let s = sps, s.count >= 4 else { return nil }
        return "avc1." + s[1...3].map { b in String(b, radix: 16, uppercase: true).leftPadded(2) }.joined()
    }

    /// One packet as an Annex B access unit; a keyframe gets the parameter sets it lacks.
    /// Parameter sets sent in band replace the known ones (the codec string follows them).
    /// Annex B input that needs nothing added is returned as it is, without a copy.
    public mutating func accessUnit(_ data: [UInt8], keyframe: Bool) -> [UInt8] {
        let units = lengthSize.map { Self.lengthPrefixedRanges(data, size: $0) } ?? Self.annexBRanges(data)
        var hasSPS = false, hasPPS = false, hasAUD = false
        for u in units where !u.isEmpty {
            switch data[u.lowerBound] & 0x1F {
            case 7: hasSPS = true; learn(Array(data[u]))
            case 8: hasPPS = true; learn(Array(data[u]))
            case 9: hasAUD = true
            default: break
            }
        }
        let prepend = keyframe && !(hasSPS && hasPPS) && sps != nil
        if lengthSize == nil && !prepend && !hasAUD { return data }
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 64 + (prepend ? (sps?.count ?? 0) + 32 : 0))
        let start: [UInt8] = [0, 0, 0, 1]
        if prepend, let s = sps {
            out += start; out += s
            for p in pps { out += start; out += p }
        }
        for u in units where !u.isEmpty {
            let type = data[u.lowerBound] & 0x1F
            if type == 9 { continue }      // access unit delimiters: not needed, some decoders dislike them mid-unit
            if prepend && (type == 7 || type == 8) { continue }
            out += start; out += data[u]
        }
        return out
    }

    /// Whether a packet carries a coded picture (a slice NAL unit, types 1–5).
    public func hasPicture(_ data: [UInt8]) -> Bool {
        let units = lengthSize.map { Self.lengthPrefixedRanges(data, size: $0) } ?? Self.annexBRanges(data)
        return units.contains { !$0.isEmpty && (1...5).contains(data[$0.lowerBound] & 0x1F) }
    }

    private mutating func learn(_ unit: [UInt8]) {
        switch unit.first.map({ $0 & 0x1F }) {
        case 7:
            if sps != unit { sps = unit; pps = [] }
        case 8:
            if !pps.contains(unit) { pps.append(unit) }
        default: break
        }
    }

    private static func sized(_ b: [UInt8], _ i: inout Int) -> [UInt8]? {
        guard i + 2 <= b.count else { return nil }
        let n = Int(b[i]) << 8 | Int(b[i + 1])
        i += 2
        guard n > 0, i + n <= b.count else { return nil }
        defer { i += n }
        return Array(b[i..<i + n])
    }

    /// NAL units of a length-prefixed packet; a length that overruns the packet ends it.
    static func lengthPrefixedRanges(_ b: [UInt8], size: Int) -> [Range<Int>] {
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

    /// NAL units between Annex B start codes (00 00 01, or 00 00 00 01).
    static func annexBRanges(_ b: [UInt8]) -> [Range<Int>] {
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

    static func annexBUnits(_ b: [UInt8]) -> [[UInt8]] { annexBRanges(b).map { Array(b[$0]) } }
}

extension String {
    fileprivate func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
