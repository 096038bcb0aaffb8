public import Relay
import Synchronization

/// What an ingest tells of its publishers: `publisher_refused` events, counted by reason (for
/// /metrics), and `publisher_accepted` ones.
public final class PublisherEvents: Sendable {
    private let events: StreamEventBus
    /// "rtmp", "rtmps", "srt": the events' `protocol`.
    private let protocolName: String
    private let counts = Mutex<[String: Int]>([:])

    init(events: StreamEventBus, protocolName: String) {
        self.events = events
        self.protocolName = protocolName
    }

    /// Publishers refused so far, by reason.
    public var refusals: [String: Int] { counts.withLock { $0 } }

    /// Counts a refusal and tells it (the stream's name as the publisher gave it; empty before
    /// it named one).
    func refused(_ reason: String, stream: String, peer: String?) {
        counts.withLock { $0[reason, default: 0] += 1 }
        events.publish(StreamEvent(stream: stream, kind: .publisherRefused, details: ["protocol": protocolName, "reason": reason, "peer": peer ?? "unknown"]))
    }

    func accepted(stream: String, peer: String?) {
        events.publish(StreamEvent(stream: stream, kind: .publisherAccepted, details: ["protocol": protocolName, "peer": peer ?? "unknown"]))
    }
}
