public import Foundation
import Synchronization

/// Something that happened to a stream, for scripts and pages that want to be told (a
/// newsroom waiting for a reporter to go live, an ops wall showing a camera drop).
public struct StreamEvent: Sendable, Codable, Hashable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// The source is live (again): `connection` counts connections.
        case live
        /// The source dropped; reconnecting (`attempt`, `detail` says why).
        case reconnecting
        /// The source stopped for good (a file's end, a stop).
        case stopped
        /// Media was lost: pictures are damaged until the next clean keyframe.
        case damaged
        /// A clean keyframe came: pictures are whole again.
        case repaired
        /// A live stream's pictures stopped coming (said once per outage, where `reconnecting`
        /// is said at every attempt).
        case signalLost = "signal_lost"
        /// Pictures again after `signal_lost` (`details.outage_seconds`).
        case signalBack = "signal_back"
        /// A publisher was taken (`details.protocol`, `details.peer`).
        case publisherAccepted = "publisher_accepted"
        /// A publisher was refused (`details.protocol`, `details.reason`, `details.peer`).
        case publisherRefused = "publisher_refused"
        /// A recording file is complete and catalogued (`details.file`, `details.bytes`,
        /// `details.start`, `details.end`, `details.sha256`).
        case segmentComplete = "segment_complete"
        /// A viewer's output was attached (`details.output`: rtsp or viewer; `details.viewer`).
        case viewerJoined = "viewer_joined"
        case viewerLeft = "viewer_left"
        /// An operator began talking to the stream's camera or field unit (`details.by`,
        /// `details.session`).
        case talkStarted = "talk_started"
        /// The talk ended (`details.by`, `details.session`, `details.seconds`; `reason`: released,
        /// the talker's connection lost, the maximum reached, taken by a higher permission).
        case talkEnded = "talk_ended"

        /// Events that change what a tile shows (the ops page and the wall follow these).
        public var changesState: Bool {
            switch self {
            case .live, .reconnecting, .stopped, .damaged, .repaired: true
            default: false
            }
        }
    }
    public var stream: String
    public var kind: Kind
    public var at: Date
    public var attempt: Int?
    public var connection: Int?
    public var detail: String?
    /// What else is known, by name (see each kind); no credentials.
    public var details: [String: String]?

    public init(stream: String, kind: Kind, at: Date = Date(), attempt: Int? = nil, connection: Int? = nil, detail: String? = nil,
                details: [String: String]? = nil) {
        self.stream = stream
        self.kind = kind
        self.at = at
        self.attempt = attempt
        self.connection = connection
        self.detail = detail
        self.details = details
    }
}

/// Fans stream events out to every subscriber, each with a bounded buffer of its own (the
/// newest 256 kept): a subscriber that stops reading never holds up a stream or another one.
public final class StreamEventBus: Sendable {
    private let subscribers = Mutex<[UInt64: AsyncStream<StreamEvent>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    public init() {}

    public func publish(_ event: StreamEvent) {
        for c in subscribers.withLock({ Array($0.values) }) { c.yield(event) }
    }

    /// Events from now on, until the returned stream is dropped or cancelled.
    public func subscribe() -> AsyncStream<StreamEvent> {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<StreamEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLock { _ = $0.removeValue(forKey: id) } }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// Ends every subscription (the server is stopping: their responses end).
    public func finish() {
        for c in subscribers.withLock({ s -> [AsyncStream<StreamEvent>.Continuation] in let a = Array(s.values); s = [:]; return a }) { c.finish() }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }
}
