/// A video stream's parameter sets, from whatever carries them: an `avcC` record (RTMP/FLV,
/// MP4), Annex B extradata (libx264's global header, MPEG-TS), RTSP's `sprop-parameter-sets`,
/// or units seen in band. The one place they are parsed: the RTSP and WHIP receivers, the
/// renditions' codec strings and WebRTC's profile matching all read them here. H.264's today;
/// the syntax is a value so that H.265's VPS, SPS and PPS can join.
public struct ParameterSets: Sendable, Equatable {
    public enum Syntax: Sendable, Equatable {
        case h264
    }

    public let syntax: Syntax
    /// Sequence parameter sets, each a NAL unit with its header, newest first.
    public private(set) var sps: [[UInt8]] = []
    public private(set) var pps: [[UInt8]] = []
    /// At most this many of each are kept (H.264 allows 32 SPS and 256 PPS ids; a stream uses one or two).
    static let maxEach = 8

    public init(syntax: Syntax = .h264) { self.syntax = syntax }

    /// From extradata: an `avcC` record, or Annex B units. Empty when it carries none.
    public init(extradata: [UInt8], syntax: Syntax = .h264) {
        self.init(syntax: syntax)
        if let avcC = AVCDecoderConfiguration(parsing: extradata) {
            for u in avcC.sps + avcC.pps { note(u) }
        } else {
            for r in H264.annexBRanges(extradata) { note(extradata[r]) }
        }
    }

    /// From RTSP's `sprop-parameter-sets` (RFC 6184: base64 NAL units, comma-separated);
    /// unreadable entries are left out.
    public init(sprop: some StringProtocol, syntax: Syntax = .h264) {
        self.init(syntax: syntax)
        for part in sprop.split(separator: ",") {
            if let unit = Base64.decode(part.trimmingASCIISpaces()) { note(unit) }
        }
    }

    /// Takes a NAL unit (with its header) if it is a parameter set; true when it was one. A
    /// set equal to one known is not kept twice; a new one goes first.
    @discardableResult
    public mutating func note(_ unit: some Collection<UInt8>) -> Bool {
        guard let header = unit.first else { return false }
        switch H264.type(header) {
        case H264.NALType.sps: Self.keep(Array(unit), in: &sps)
        case H264.NALType.pps: Self.keep(Array(unit), in: &pps)
        default: return false
        }
        return true
    }

    private static func keep(_ unit: [UInt8], in list: inout [[UInt8]]) {
        if list.first == unit { return }
        list.removeAll { $0 == unit }
        list.insert(unit, at: 0)
        if list.count > maxEach { list.removeLast() }
    }

    /// An SPS and a PPS are known: a decoder can start.
    public var isComplete: Bool { !sps.isEmpty && !pps.isEmpty }

    /// The newest SPS and PPS, each behind a 4-byte start code; empty until both are known.
    public var annexB: [UInt8] {
        guard let s = sps.first, let p = pps.first else { return [] }
        return [0, 0, 0, 1] + s + [0, 0, 0, 1] + p
    }

    /// profile_idc of the newest SPS (`0x42` baseline, `0x4D` main, `0x64` high).
    public var profileIDC: UInt8? {
        guard let s = sps.first, s.count > 1 else { return nil }
        return s[1]
    }

    /// The codec string of the newest SPS (`avc1.PPCCLL`: profile, constraint flags, level),
    /// hex in capitals as WebCodecs and Apple write it.
    public var codecString: String? { sps.first.flatMap { H264.codecString(sps: $0) } }
}
