public import MediaCore
import Foundation

/// A publisher's media as FLV tags, handed from a session layer's thread (the RTMP server's
/// event loop) to the stream's reader in memory: no pipe, no system call per tag.
///
/// The publisher's side pushes and never waits. The ingest thread (`FLVFeedSource`) either
/// takes the tags in order, waking only when one is there, or attaches a consumer that takes
/// each tag on the pushing thread as it comes (`attach`). What the reader has not taken is
/// bounded (`limit`): more than that means it stopped, and the push says so.
public final class FLVFeed: @unchecked Sendable {
    // Safety: every stored `var` is read and written with `condition` locked.

    /// One FLV tag: 8 audio, 9 video, 18 script data.
    public struct Tag: Sendable {
        public let type: UInt8
        /// Milliseconds, as the publisher stamped it.
        public let timestamp: UInt32
        public let payload: [UInt8]
        /// Monotonic nanoseconds when it was pushed.
        public let arrivalNanos: UInt64
    }

    private let condition = NSCondition()
    private var tags: [Tag] = []
    private var head = 0
    private var queuedBytes = 0
    private var publisherLeft = false
    private var readerGone = false
    private var readerWaiting = false
    private var flags: (header: UInt8, announced: Bool)?
    /// Takes each tag as it is pushed, on the pushing thread (see `attach`).
    private var consumer: ((Tag) -> Void)?
    private var lastPushNanos: UInt64 = 0

    /// The most a reader may leave untaken before the publisher is dropped.
    public static let limit = 32 << 20

    public init() {}

    /// Which streams the FLV header announces (1 video, 4 audio, 5 both), told before the
    /// first tag; `announced` when the publisher's metadata said so rather than a guess from
    /// its first tag (then nothing else can come, and probing need not wait for it).
    public func start(headerFlags: UInt8, announced: Bool) {
        condition.lock(); defer { condition.unlock() }
        if flags == nil { flags = (headerFlags, announced) }
    }

    var headerFlags: (header: UInt8, announced: Bool)? {
        condition.lock(); defer { condition.unlock() }
        return flags
    }

    /// Hands a tag on. False when the reader is gone or has fallen `limit` behind: the
    /// publisher should be dropped.
    public func push(type: UInt8, timestamp: UInt32, payload: [UInt8]) -> Bool {
        let now = MonotonicClock.nanoseconds()
        condition.lock(); defer { condition.unlock() }
        if readerGone || publisherLeft || queuedBytes + payload.count > Self.limit { return false }
        lastPushNanos = now
        if let consumer {
            consumer(Tag(type: type, timestamp: timestamp, payload: payload, arrivalNanos: now))
            return true
        }
        tags.append(Tag(type: type, timestamp: timestamp, payload: payload, arrivalNanos: now))
        queuedBytes += payload.count
        if readerWaiting { condition.signal() }
        return true
    }

    /// The publisher left: the reader gets what is queued, then the end.
    public func finish() {
        condition.lock(); defer { condition.unlock() }
        publisherLeft = true
        if readerWaiting { condition.signal() }
    }

    /// The reader is gone (the stream reconnects, stops or was removed): pushes fail from now.
    public func abandon() {
        condition.lock(); defer { condition.unlock() }
        readerGone = true
        tags.removeAll()
        head = 0
        queuedBytes = 0
    }

    public var isAbandoned: Bool {
        condition.lock(); defer { condition.unlock() }
        return readerGone
    }

    /// From now on every tag is handed to `consumer` as it is pushed, on the pushing thread,
    /// with the feed locked (so in order, one at a time); the tags queued so far are handed to
    /// it first, on this thread. `detach` ends it.
    func attach(_ consumer: @escaping (Tag) -> Void) {
        condition.lock(); defer { condition.unlock() }
        while head < tags.count {
            consumer(tags[head])
            head += 1
        }
        tags.removeAll()
        head = 0
        queuedBytes = 0
        lastPushNanos = MonotonicClock.nanoseconds()
        self.consumer = consumer
    }

    func detach() {
        condition.lock(); defer { condition.unlock() }
        consumer = nil
    }

    enum Attached {
        /// The publisher left.
        case ended
        /// Nothing was pushed for the silence given.
        case silent
        /// Neither yet.
        case waiting
    }

    /// With a consumer attached: waits at most `wait` seconds for the publisher to leave, and
    /// says whether it did or has been silent for `silence` seconds.
    func waitAttached(wait: Double, silence: Double) -> Attached {
        condition.lock(); defer { condition.unlock() }
        if !publisherLeft {
            readerWaiting = true
            _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
            readerWaiting = false
        }
        if publisherLeft { return .ended }
        return MonotonicClock.nanoseconds() &- lastPushNanos >= Timestamps.nanoseconds(silence) ? .silent : .waiting
    }

    enum Next {
        case tag(Tag)
        /// The publisher left and everything was taken.
        case end
        /// Nothing came in the time given.
        case nothing
    }

    /// The next tag, waiting at most `wait` seconds for one (0: not at all).
    func next(wait: Double) -> Next {
        condition.lock(); defer { condition.unlock() }
        if head == tags.count && !publisherLeft && wait > 0 {
            readerWaiting = true
            _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
            readerWaiting = false
        }
        guard head < tags.count else { return publisherLeft ? .end : .nothing }
        let t = tags[head]
        head += 1
        queuedBytes -= t.payload.count
        if head == tags.count {
            tags.removeAll(keepingCapacity: tags.count <= 64)
            head = 0
        } else if head >= 256 && head * 2 >= tags.count {
            tags.removeFirst(head)
            head = 0
        }
        return .tag(t)
    }
}
