import MediaCore
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
    /// `sendrecv` unless the section says otherwise.
    var direction: String

    init(_ media: SessionDescription.Media) {
        direction = media.direction
        kind = media.kind
        let f = media.formats.first
        payloadType = f?.payloadType ?? -1
        encoding = (f?.codec ?? "").uppercasedASCII()
        clockRate = f?.clockRate ?? 0
        channels = f?.channels
        fmtp = f?.parameters ?? [:]
        control = media.control
    }

    /// The talk format of a camera's backchannel section: G.711, or AAC in `mode=AAC-hbr` with
    /// its AudioSpecificConfig; nil for anything the talk path cannot encode.
    var talkFormat: TalkFormat? {
        guard kind == "audio", (0...127).contains(payloadType), (8000...96000).contains(clockRate) else { return nil }
        let ch = channels ?? 1
        guard (1...2).contains(ch) else { return nil }
        switch encoding {
        case "PCMU", "PCMA":
            return TalkFormat(encoding: encoding, payloadType: UInt8(payloadType), clockRate: clockRate, channels: ch)
        case "MPEG4-GENERIC":
            guard fmtp["mode"].map({ $0.uppercasedASCII() == "AAC-HBR" }) ?? false, fmtp["sizelength"] == "13",
                  let config = fmtp["config"].flatMap(Self.hex), config.count >= 2 else { return nil }
            return TalkFormat(encoding: encoding, payloadType: UInt8(payloadType), clockRate: clockRate, channels: ch, config: config)
        default:
            return nil
        }
    }

    /// Bytes from hex text (`1408`); nil when it is not whole bytes of hex digits.
    static func hex(_ s: String) -> [UInt8]? {
        let digits = Array(s.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0, digits.count <= 64 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let hi = Self.nibble(digits[i]), let lo = Self.nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x37
        case 0x61...0x66: c - 0x57
        default: nil
        }
    }

    /// RFC 7798 §7.1: H.265 units carry decoding order numbers when `sprop-max-don-diff` is above 0.
    var h265UsesDONL: Bool {
        (fmtp["sprop-max-don-diff"].flatMap { PeerNumber.integer($0, in: 0...32767) } ?? 0) > 0
    }
}
