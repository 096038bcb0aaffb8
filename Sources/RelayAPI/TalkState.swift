public import Foundation

/// `GET /streams/{name}/talk`: whether the stream can be talked to now (its camera's
/// backchannel is set up, or its WHIP field unit receives audio), in what format, and who
/// holds the floor.
public struct TalkState: Sendable, Codable, Equatable {
    public struct Talker: Sendable, Codable, Equatable {
        public var who: String
        public var since: Date
        public init(who: String, since: Date) {
            self.who = who
            self.since = since
        }
    }
    public var stream: String
    public var available: Bool
    /// `PCMU/8000`, `MPEG4-GENERIC/16000`, `OPUS/48000/2`…
    public var format: String?
    public var talker: Talker?

    public init(stream: String, available: Bool, format: String?, talker: Talker?) {
        self.stream = stream
        self.available = available
        self.format = format
        self.talker = talker
    }
}
