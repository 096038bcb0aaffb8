public import Foundation
import Synchronization

/// Something that happened to a stream, for scripts and pages that want to be told (a
/// newsroom waiting for a reporter to go live, an ops wall showing a camera drop).
public struct StreamEvent: Sendable, Codable, Hashable {
    public enum Kind: String, Sendable, Codable {
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
    }
    public var stream: String
    public var kind: Kind
    public var at: Date
    public var attempt: Int?
    public var connection: Int?
    public var detail: String?
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
