public import MediaCore
public import Demux
import Foundation
import Synchronization

/// Streams fed by publishers on LiveRelay's own ingest ports (`source: publish`): where a
/// publisher's media meets the stream's ingest thread.
///
/// A session layer that accepted a publisher for stream NAME calls `begin(NAME)`:
/// - the one-port RTMP server gets an `FLVFeed` (`beginFeed`) and pushes the publisher's tags
///   into it; the stream's ingest thread, waiting in its opener, reads them in memory
///   (`FLVFeedSource`);
/// - SRT and HLS uploads get the write end of a pipe and write their MPEG-TS there; the ingest
///   thread hands the read end to libavformat like any source.
/// When the publisher leaves, the feed or pipe ends, the stream reconnects and waits for the
/// next one: viewers stay, HLS marks a discontinuity. One publisher per stream at a time.
public final class PublishPoints: Sendable {
    public static let scheme = "publish"

    private struct State {
        /// Media ready for a waiting ingest thread, by stream.
        var ready: [String: Handoff] = [:]
        /// Streams with a publisher now.
        var live: Set<String> = []
    }
    /// What a publisher's media reaches the ingest thread through.
    private enum Handoff {
        case pipe(Int32)
        case feed(FLVFeed)
        case rtp(RTPPushSource)

        func discard() {
            switch self {
            case .pipe(let fd): close(fd)
            case .feed(let f): f.abandon()
            case .rtp(let s): s.finish()
            }
        }
    }
    private let state = Mutex(State())
    /// Wakes waiting openers when a publisher arrives (they also look at their interrupt handle
    /// every 200 ms), instead of each polling.
    private let arrived = NSCondition()
    private let names: Mutex<Set<String>>
    /// The streams that take publishers (`source: publish`), now.
    public var streams: Set<String> { names.withLock { $0 } }

    public init(streams: Set<String>) {
        names = Mutex(streams)
    }

    /// A publish stream added at run time.
    public func add(_ stream: String) { names.withLock { _ = $0.insert(stream) } }

    /// A publish stream removed: a waiting read end is closed.
    public func remove(_ stream: String) {
        names.withLock { _ = $0.remove(stream) }
        state.withLock({ $0.ready.removeValue(forKey: stream) })?.discard()
    }

    public enum Refusal: Error, Equatable {
        case unknownStream
        case alreadyPublishing
        case pipe(Int32)
    }

    /// A publisher for `stream` was accepted: the file descriptor to write its media to (the
    /// caller closes it when the publisher leaves, then calls `end`).
    public func begin(_ stream: String) -> Result<Int32, Refusal> {
        var fds: [Int32] = [0, 0]
        return begin(stream) { () -> Result<(Handoff, Int32), Refusal> in
            guard pipe(&fds) == 0 else { return .failure(.pipe(errno)) }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            // A larger pipe (1 MiB where allowed): a keyframe fits while the demuxer catches up.
            _ = fcntl(fds[1], 1031 /* F_SETPIPE_SZ */, 1 << 20)
            return .success((.pipe(fds[0]), fds[1]))
        }
    }

    /// A publisher of FLV tags for `stream` was accepted: the feed to push them into (the
    /// caller finishes it when the publisher leaves, then calls `end`).
    public func beginFeed(_ stream: String) -> Result<FLVFeed, Refusal> {
        begin(stream) { () -> Result<(Handoff, FLVFeed), Refusal> in
            let feed = FLVFeed()
            return .success((.feed(feed), feed))
        }
    }

    /// A publisher of RTP (WebRTC's WHIP) for `stream` was accepted: its packets go to
    /// `source`, which the stream's ingest thread reads (the caller finishes it when the
    /// publisher leaves, then calls `end`).
    public func beginRTP(_ stream: String, source: RTPPushSource) -> Result<Void, Refusal> {
        begin(stream) { () -> Result<(Handoff, Void), Refusal> in .success((.rtp(source), ())) }
    }

    private func begin<T>(_ stream: String, _ make: () -> Result<(Handoff, T), Refusal>) -> Result<T, Refusal> {
        guard names.withLock({ $0.contains(stream) }) else { return .failure(.unknownStream) }
        let result: Result<T, Refusal> = state.withLock { s in
            guard !s.live.contains(stream) else { return .failure(.alreadyPublishing) }
            switch make() {
            case .failure(let f): return .failure(f)
            case .success(let (handoff, publisherEnd)):
                s.ready.removeValue(forKey: stream)?.discard()
                s.ready[stream] = handoff
                s.live.insert(stream)
                return .success(publisherEnd)
            }
        }
        if case .success = result { arrived.lock(); arrived.broadcast(); arrived.unlock() }
        return result
    }

    /// The publisher of `stream` left (its write end is closed).
    public func end(_ stream: String) {
        state.withLock { _ = $0.live.remove(stream) }
    }

    public func isLive(_ stream: String) -> Bool { state.withLock { $0.live.contains(stream) } }

    /// The stream's opener: waits (interruptibly) for a publisher, then reads its media.
    func open(url: String, options: SourceOptions, interrupt: InterruptHandle) throws(IngestError) -> any PacketSource {
        let stream = String(url.dropFirst("\(Self.scheme)://".count))
        while true {
            if interrupt.isInterrupted { throw IngestError(.stopped, source: url, stage: "waiting for a publisher", detail: "stopped") }
            switch state.withLock({ $0.ready.removeValue(forKey: stream) }) {
            case .feed(let feed):
                return try FLVFeedSource(feed: feed, url: url, options: options, interruptHandle: interrupt)
            case .rtp(let source):
                source.adopt(interrupt)
                try source.probe(timeout: options.openTimeout)
                return source
            case .pipe(let fd):
                var o = options
                o.listen = false
                o.realtime = false
                // Silence from a publisher that is still connected ends the session like any stall.
                do {
                    return PipeSource(try IngestSession(url: "pipe:\(fd)", options: o, interruptHandle: interrupt), fd: fd)
                } catch {
                    close(fd)
                    throw error
                }
            case nil:
                break
            }
            arrived.lock()
            if state.withLock({ $0.ready[stream] == nil }) { _ = arrived.wait(until: Date().addingTimeInterval(0.2)) }
            arrived.unlock()
        }
    }
}

/// A source read from a pipe: libavformat's `pipe:` protocol leaves the descriptor open, so
/// it is closed here, with the source.
final class PipeSource: PacketSource {
    private let inner: IngestSession
    private let fd: Int32
    init(_ inner: IngestSession, fd: Int32) { self.inner = inner; self.fd = fd }
    deinit { close(fd) }
    var streams: [StreamInfo] { inner.streams }
    var formatName: String { inner.formatName }
    func readPacket() throws -> Packet? { try inner.readPacket() }
    var interruptHandle: InterruptHandle { inner.interruptHandle }
}
