import Wire

/// What a webhook receives, one event: `{"id", "event", "stream", "time", "details": {…}}`.
/// Receivers (and the tests) decode it as this type; `json` is the body as sent.
public struct WebhookBody: Sendable, Codable, Equatable {
    /// The same on every attempt of one event (a receiver can drop repeats).
    public var id: String
    public var event: StreamEvent.Kind
    public var stream: String
    /// RFC 3339 in UTC with milliseconds.
    public var time: String
    /// `attempt`, `connection`, `reason` and the kind's own details (`StreamEvent.fields`).
    public var details: [String: String]

    enum CodingKeys: String, CodingKey {
        case id, event, stream, time, details
    }

    public init(id: String, event: StreamEvent.Kind, stream: String, time: String, details: [String: String]) {
        self.id = id
        self.event = event
        self.stream = stream
        self.time = time
        self.details = details
    }

    /// The body of `event`'s delivery `id`.
    public init(_ event: StreamEvent, id: String) {
        self.init(id: id, event: event.kind, stream: event.stream, time: event.hookTime, details: event.fields)
    }

    /// The body as sent, on one line: the keys in `CodingKeys`' order, the details' keys
    /// sorted, every string escaped by `JSONText` (U+2028 and U+2029 too, which end a line for
    /// some JavaScript readers). The bytes are what the signature signs; any JSON decoder reads
    /// them back as this type.
    public var json: [UInt8] {
        var text = "{\"id\":" + JSONText.quoted(id) + ",\"event\":" + JSONText.quoted(event.rawValue)
        text += ",\"stream\":" + JSONText.quoted(stream) + ",\"time\":" + JSONText.quoted(time) + ",\"details\":{"
        for (i, (k, v)) in details.sorted(by: { $0.key < $1.key }).enumerated() {
            text += (i == 0 ? "" : ",") + JSONText.quoted(k) + ":" + JSONText.quoted(v)
        }
        return Array((text + "}}").utf8)
    }
}
