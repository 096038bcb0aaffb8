public import MediaCore
public import Demux
import Foundation
import Synchronization

/// Streams fed by publishers on LiveRelay's own ingest ports (`source: publish`): where a
/// publisher's media meets the stream's ingest thread.
///
/// A session layer (the one-port RTMP server) that accepted a publisher for stream NAME calls
/// `begin(NAME)`: it gets the write end of a pipe and writes the media there (FLV); the stream's
/// ingest thread, waiting in its opener, gets the read end and hands it to libavformat like any
/// source. When the publisher leaves, the pipe ends, the stream reconnects and waits for the
/// next one: viewers stay, HLS marks a discontinuity. One publisher per stream at a time.
public final class PublishPoints: Sendable {
    public static let scheme = "publish"

    private struct State {
        /// Read ends ready for a waiting ingest thread, by stream.
        var ready: [String: Int32] = [:]
        /// Streams with a publisher now.
        var live: Set<String> = []
        /// FLV header flags the current publisher announced.
        var announced: [String: UInt8] = [:]
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
        if let fd = state.withLock({ $0.ready.removeValue(forKey: stream) }) { close(fd) }
    }

    public enum Refusal: Error, Equatable {
        case unknownStream
        case alreadyPublishing
        case pipe(Int32)
    }

    /// A publisher for `stream` was accepted: the file descriptor to write its media to (the
    /// caller closes it when the publisher leaves, then calls `end`).
    public func begin(_ stream: String) -> Result<Int32, Refusal> {
        guard names.withLock({ $0.contains(stream) }) else { return .failure(.unknownStream) }
        var fds: [Int32] = [0, 0]
        let result: Result<Int32, Refusal> = state.withLock { s in
            guard !s.live.contains(stream) else { return .failure(.alreadyPublishing) }
            guard pipe(&fds) == 0 else { return .failure(.pipe(errno)) }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            // A larger pipe (1 MiB where allowed): a keyframe fits while the demuxer catches up.
            _ = fcntl(fds[1], 1031 /* F_SETPIPE_SZ */, 1 << 20)
            s.announced[stream] = nil
            if let stale = s.ready.removeValue(forKey: stream) { close(stale) }
            s.ready[stream] = fds[0]
            s.live.insert(stream)
            return .success(fds[1])
        }
        if case .success = result { arrived.lock(); arrived.broadcast(); arrived.unlock() }
        return result
    }

    /// What the publisher of `stream` announced in its FLV header (1 video, 4 audio, 5 both):
    /// told before the header is written, so the reader knows it once its input is open.
    public func announce(_ stream: String, flvFlags: UInt8) {
        state.withLock { $0.announced[stream] = flvFlags }
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
            if let fd = state.withLock({ $0.ready.removeValue(forKey: stream) }) {
                var o = options
                o.listen = false
                o.realtime = false
                // A publisher that announced one stream (video, or audio, alone): nothing else
                // can come, so probing stops at its first frames instead of waiting 100 ms of
                // media for a second stream (FLV keeps looking until it has two).
                o.analyzeDurationAfterOpen = AnalyzeHint { [weak self] in
                    self?.state.withLock { $0.announced[stream] }.flatMap { $0 == 1 || $0 == 4 ? 0.001 : nil }
                }
                // Silence from a publisher that is still connected ends the session like any stall.
                do {
                    return PipeSource(try IngestSession(url: "pipe:\(fd)", options: o, interruptHandle: interrupt), fd: fd)
                } catch {
                    close(fd)
                    throw error
                }
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
