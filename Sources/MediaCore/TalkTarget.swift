/// How a talk path takes sound (the format a camera's ONVIF backchannel offered, or Opus for
/// a WebRTC publisher): what the talk session encodes to and how it is cut into RTP.
public struct TalkFormat: Sendable, Hashable, CustomStringConvertible {
    /// The RTP encoding name, uppercased: `PCMU`, `PCMA`, `MPEG4-GENERIC` (AAC, `mode=AAC-hbr`)
    /// or `OPUS`.
    public var encoding: String
    public var payloadType: UInt8
    public var clockRate: Int
    public var channels: Int
    /// AAC: the AudioSpecificConfig the camera named (`config=`), which the encoder must match.
    public var config: [UInt8]

    public init(encoding: String, payloadType: UInt8, clockRate: Int, channels: Int = 1, config: [UInt8] = []) {
        self.encoding = encoding
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.channels = channels
        self.config = config
    }

    public var description: String { "\(encoding)/\(clockRate)" + (channels > 1 ? "/\(channels)" : "") }
}

/// Where an operator's voice goes: a camera's speaker (the ONVIF RTSP backchannel, on the
/// source's own session) or a field unit (a WHIP publisher's session). Callable from any thread.
public protocol TalkTarget: AnyObject, Sendable {
    var talkFormat: TalkFormat { get }
    /// Sends one RTP packet (already in `talkFormat`, this side's SSRC and sequence); false once
    /// the path is gone (the source's session ended), or when the packet could not leave in time.
    func sendTalk(_ rtp: [UInt8]) -> Bool
    /// The session that carried it has ended: nothing more can be sent.
    var isClosed: Bool { get }
}

/// A source with a talk path (an RTSP camera whose backchannel was set up, a WHIP publisher
/// that receives audio).
public protocol TalkPathProviding: AnyObject {
    var talkTarget: (any TalkTarget)? { get }
}
