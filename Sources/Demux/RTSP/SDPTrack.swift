import Wire

/// One media section of a description as LiveRelay's RTP receivers take it (a camera's
/// DESCRIBE answer, a WHIP publisher's accepted offer): its first payload format. Parsed by
/// Wire's `SessionDescription`, the one SDP parser.
struct SDPTrack {
    var kind: String
    var payloadType: Int
    /// Uppercased encoding name (`H264`, `MPEG4-GENERIC`, `OPUS`, `PCMU` …); empty when unnamed.
    var encoding: String
    var clockRate: Int
    var channels: Int?
    /// `a=fmtp` parameters, keys lowercased.
    var fmtp: [String: String]
    var control: String?

    init(_ media: SessionDescription.Media) {
        kind = media.kind
        let f = media.formats.first
        payloadType = f?.payloadType ?? -1
        encoding = (f?.codec ?? "").uppercasedASCII()
        clockRate = f?.clockRate ?? 0
        channels = f?.channels
        fmtp = f?.parameters ?? [:]
        control = media.control
    }

    /// RFC 7798 §7.1: H.265 units carry decoding order numbers when `sprop-max-don-diff` is above 0.
    var h265UsesDONL: Bool {
        (fmtp["sprop-max-don-diff"].flatMap { PeerNumber.integer($0, in: 0...32767) } ?? 0) > 0
    }
}
