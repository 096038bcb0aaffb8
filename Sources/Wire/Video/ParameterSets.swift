/// A video stream's parameter sets, from whatever carries them: an `avcC` record (RTMP/FLV,
/// MP4), Annex B extradata (libx264's global header, MPEG-TS), RTSP's `sprop-parameter-sets`,
/// or units seen in band. The one place they are parsed: the RTSP and WHIP receivers, the
/// renditions' codec strings and WebRTC's profile matching all read them here. H.264's SPS and
/// PPS, or H.265's VPS, SPS and PPS (`hvcC`, RFC 7798's `sprop-vps/sps/pps`).
public struct ParameterSets: Sendable, Equatable {
    public enum Syntax: Sendable, Equatable {
        case h264
        case h265

        /// The syntax of an FFmpeg codec name (`h264`, `hevc`); nil for any other.
        public init?(codecName: String) {
            switch codecName {
            case "h264": self = .h264
            case "hevc": self = .h265
            default: return nil
            }
        }
    }

    public let syntax: Syntax
    /// H.265's video parameter sets, each a NAL unit with its header, newest first (H.264: none).
    public private(set) var vps: [[UInt8]] = []
    /// Sequence parameter sets, each a NAL unit with its header, newest first.
    public private(set) var sps: [[UInt8]] = []
    public private(set) var pps: [[UInt8]] = []
    /// At most this many of each are kept (H.264 allows 32 SPS and 256 PPS ids; a stream uses one or two).
    static let maxEach = 8

    public init(syntax: Syntax = .h264) { self.syntax = syntax }

    /// From extradata: an `avcC` (H.264) or `hvcC` (H.265) record, or Annex B units. Empty when it carries none.
    public init(extradata: [UInt8], syntax: Syntax = .h264) {
        self.init(syntax: syntax)
        if syntax == .h264, let avcC = AVCDecoderConfiguration(parsing: extradata) {
            for u in avcC.sps + avcC.pps { note(u) }
        } else if syntax == .h265, let hvcC = HEVCDecoderConfiguration(parsing: extradata) {
            for u in hvcC.units { note(u) }
        } else {
            for r in H264.annexBRanges(extradata) { note(extradata[r]) }
        }
    }

    /// From RTSP's `sprop-parameter-sets` (RFC 6184: base64 NAL units, comma-separated);
    /// unreadable entries are left out.
    public init(sprop: some StringProtocol, syntax: Syntax = .h264) {
        self.init(syntax: syntax)
        noteSprop(sprop)
    }

    /// From an SDP format's parameters (keys lowercased): H.264's `sprop-parameter-sets`, or
    /// H.265's `sprop-vps`, `sprop-sps` and `sprop-pps` (RFC 7798 §7.1).
    public init(fmtp: [String: String], syntax: Syntax) {
        self.init(syntax: syntax)
        let keys = syntax == .h264 ? ["sprop-parameter-sets"] : ["sprop-vps", "sprop-sps", "sprop-pps"]
        for k in keys { if let v = fmtp[k] { noteSprop(v) } }
    }

    /// Base64 NAL units, comma-separated.
    private mutating func noteSprop(_ sprop: some StringProtocol) {
        for part in sprop.split(separator: ",") {
            if let unit = Base64.decode(part.trimmingASCIISpaces()) { note(unit) }
        }
    }

    /// Takes a NAL unit (with its header) if it is a parameter set; true when it was one. A
    /// set equal to one known is not kept twice; a new one goes first.
    @discardableResult
    public mutating func note(_ unit: some Collection<UInt8>) -> Bool {
        guard let header = unit.first else { return false }
        switch (syntax, syntax == .h264 ? H264.type(header) : H265.type(header)) {
        case (.h264, H264.NALType.sps), (.h265, H265.NALType.sps): Self.keep(Array(unit), in: &sps)
        case (.h264, H264.NALType.pps), (.h265, H265.NALType.pps): Self.keep(Array(unit), in: &pps)
        case (.h265, H265.NALType.vps): Self.keep(Array(unit), in: &vps)
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

    /// An SPS and a PPS are known (and for H.265 a VPS): a decoder can start.
    public var isComplete: Bool { !sps.isEmpty && !pps.isEmpty && (syntax == .h264 || !vps.isEmpty) }

    /// The newest (VPS,) SPS and PPS, each behind a 4-byte start code; empty until all are known.
    public var annexB: [UInt8] {
        guard isComplete, let s = sps.first, let p = pps.first else { return [] }
        return (vps.first.map { [0, 0, 0, 1] + $0 } ?? []) + [0, 0, 0, 1] + s + [0, 0, 0, 1] + p
    }

    /// H.264's profile_idc of the newest SPS (`0x42` baseline, `0x4D` main, `0x64` high); nil for H.265.
    public var profileIDC: UInt8? {
        guard syntax == .h264, let s = sps.first, s.count > 1 else { return nil }
        return s[1]
    }

    /// The codec string of the newest SPS (`avc1.PPCCLL`: profile, constraint flags, level; or
    /// `hvc1.1.6.L93.B0`), hex in capitals as WebCodecs and Apple write it.
    public var codecString: String? {
        sps.first.flatMap { syntax == .h264 ? H264.codecString(sps: $0) : H265.codecString(sps: $0) }
    }
}
