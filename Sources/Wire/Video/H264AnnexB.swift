/// H.264 as WebCodecs takes it without a `description`: Annex B access units, each keyframe
/// carrying its SPS and PPS, and the codec string (`avc1.PPCCLL`) read off the SPS.
///
/// Demuxers hand H.264 over in two forms: Annex B with parameter sets out of band (RTSP's
/// `sprop-parameter-sets`, MPEG-TS) or length-prefixed with an `avcC` record (RTMP/FLV, MP4).
/// Both become Annex B here, without touching a slice.
public struct H264AnnexB: Sendable {
    /// Bytes of each NAL unit's length prefix; nil for Annex B input.
    public private(set) var lengthSize: Int?
    /// The parameter sets known: from the extradata, then as the stream sends them in band.
    public private(set) var parameterSets = ParameterSets()
    /// The newest SPS.
    public var sps: [UInt8]? { parameterSets.sps.first }
    public var pps: [[UInt8]] { parameterSets.pps }

    /// From a stream's extradata: an `avcC` record, Annex B parameter sets, or nothing.
    public init(extradata: [UInt8]) {
        lengthSize = H264.lengthSize(extradata: extradata)
        parameterSets = ParameterSets(extradata: extradata)
    }

    /// `avc1.PPCCLL` from the SPS (profile, constraint flags, level); nil before an SPS is known.
    public var codec: String? { parameterSets.codecString }

    /// One packet as an Annex B access unit; a keyframe gets the parameter sets it lacks.
    /// Parameter sets sent in band replace the known ones (the codec string follows them).
    /// Annex B input that needs nothing added is returned as it is, without a copy.
    public mutating func accessUnit(_ data: [UInt8], keyframe: Bool) -> [UInt8] {
        let units = H264.units(data, lengthSize: lengthSize)
        var hasSPS = false, hasPPS = false, hasAUD = false
        for u in units where !u.isEmpty {
            switch data[u.lowerBound] & 0x1F {
            case 7: hasSPS = true; parameterSets.note(data[u])
            case 8: hasPPS = true; parameterSets.note(data[u])
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
            // Oldest first: a decoder keeps the last of a PPS id it is given.
            for p in pps.reversed() { out += start; out += p }
        }
        for u in units where !u.isEmpty {
            let type = data[u.lowerBound] & 0x1F
            if type == 9 { continue }      // access unit delimiters: not needed, some decoders dislike them mid-unit
            if prepend && (type == 7 || type == 8) { continue }
            out += start; out += data[u]
        }
        return out
    }
}
