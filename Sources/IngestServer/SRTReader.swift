public import Relay
import Demux
import Foundation
import MediaCore
import Mux
import Synchronization

/// One SRT reader's copy of a stream (`streamid=read:NAME`): an output like every viewer's (kind
/// `srt`, listed by the API, its policy switchable there, drops counted by reason), sent in
/// MPEG-TS, seven TS packets a message, the tail of each media packet at once. The stream is
/// muxed once for all its readers (`RTPCut.joinMPEGTS`) and one thread sends to all of them
/// (`SRTReaders`). A reader whose libsrt send buffer is full is skipped to the next keyframe
/// (`slow_viewer`), never slowing the stream or anyone else. Its timeline is continuous across
/// the source's reconnects; a reconnect that changes the tracks ends the session (the reader
/// connects again and reads the new ones).
final class SRTReader: PacketOutput, @unchecked Sendable {
    // Safety: `cut`, `why`, `started` and `lastCheck` are used only by the stream's readers'
    // thread (and by `serve` after the reader ended); the rest is immutable or Sendable.

    /// A reader gets at most a second of backlog, as an RTSP client does.
    static let defaultPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 1000))

    let handle: OutputHandle
    let connection: SRTConnection
    let running: @Sendable () -> Bool
    /// The stream's MPEG-TS, shared with its other readers.
    var cut: RTPCut?
    /// Why the reader ended, once it has.
    var why: String?
    /// When the connection and the server were last checked (monotonic nanoseconds).
    var lastCheck: UInt64 = 0
    /// The reader has had its first keyframe (before it, the cut's MPEG-TS is mid-picture).
    var started = false
    let hub: StreamHub
    private let ended = DispatchSemaphore(value: 0)

    /// A reader of `hub` sent its share of `cut` (joined first: the hub fills the cut's queue
    /// before the reader's, so the cut has every packet the reader takes).
    private init(hub: StreamHub, name: String, cut: RTPCut, connection: SRTConnection, readers: SRTReaders, running: @escaping @Sendable () -> Bool) {
        self.connection = connection
        self.running = running
        self.cut = cut
        self.hub = hub
        handle = hub.attachOutput(name, kind: .srt, policy: Self.defaultPolicy, taking: .notifying({ [weak readers] in readers?.wake() }))
        hub.register(self)
    }

    /// Sends `hub` to `connection` until the reader leaves, the stream ends or changes its
    /// tracks, or `running` says stop; the reason, for the log. A stream not yet started is
    /// waited for (asked for, if it is on demand) while the reader stays. Waits on the caller's
    /// thread; the sending is the stream's readers' thread's.
    static func serve(hub: StreamHub, name: String, connection: SRTConnection, running: @escaping @Sendable () -> Bool) -> String {
        var cut: RTPCut?
        while cut == nil {
            do {
                cut = try RTPCut.joinMPEGTS(hub: hub)
            } catch {
                return "its packets could not be muxed: \(error.description)"
            }
            if cut == nil {
                guard running() else { return "the server stopped" }
                guard connection.isConnected else { return "the reader left" }
                hub.demand()
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let reader = SRTReaders.join(hub) { readers in
            SRTReader(hub: hub, name: name, cut: cut!, connection: connection, readers: readers, running: running)
        }
        reader.handle.setState(.running)
        hub.requestKeyframe()
        reader.ended.wait()
        return reader.why ?? ""
    }

    func start() {}
    func stop() async { handle.queue.close() }

    /// Ends the reader (once, from the readers' thread): its queue closes, the stream forgets it,
    /// it leaves the cut, and `serve` returns `why`.
    func finish(_ why: String) {
        guard self.why == nil else { return }
        self.why = why
        handle.queue.close()
        handle.detach()
        cut?.leave()
        cut = nil
        ended.signal()
    }

    /// Sends what the reader's queue holds; false once it ended.
    func pump(now: UInt64) -> Bool {
        guard let cut, why == nil else { return false }
        if now &- lastCheck > 250_000_000 {
            lastCheck = now
            if !running() { finish("the server stopped"); return false }
            if !connection.isConnected { finish("the reader left"); return false }
            // A reader keeps an on-demand source connected, as any viewer does.
            hub.demand()
        }
        let queue = handle.queue
        while let item = queue.pop(timeout: 0) {
            _ = queue.takeDiscontinuity()
            // A new reader starts at a keyframe (its PAT and PMT come with it).
            if !started {
                guard item.isKeyframe else { continue }
                started = true
            }
            switch cut.lookup(item) {
            case .piece(let piece):
                for message in piece.datagrams {
                    switch connection.send(message.bytes) {
                    case .sent: continue
                    case .stalled:
                        // Behind: what waits is stale; the rest of this picture goes too.
                        handle.fellBehind()
                    case .ended(let why):
                        finish(why)
                        return false
                    }
                    break
                }
            case .missed:
                // Kept longer than the cut keeps its TS: resume at a keyframe, counted.
                queue.dropTaken(.resync)
                queue.discardAll(.resync, always: true)
            case .ended:
                finish("the source came back with other tracks")
                return false
            }
        }
        if queue.isClosed {
            finish("the stream ended")
            return false
        }
        return true
    }
}

/// A stream's SRT readers, all sent to from one thread: woken once for a packet, it sends that
/// packet's messages to every reader in one pass without waiting on any, so libsrt's sender
/// too sends to all of them in one pass (a thread per reader woke libsrt's sender once each).
/// Made with the stream's first reader, gone with its last.
final class SRTReaders: @unchecked Sendable {
    // Safety: `members` is guarded by `lock`; the wake flag is atomic; the thread is its own.

    private static let registry = Mutex<[ObjectIdentifier: SRTReaders]>([:])

    private let key: ObjectIdentifier
    private let lock = NSLock()
    private let condition = NSCondition()
    private let woken = Atomic<Bool>(false)
    private var members: [SRTReader] = []
    private var started = false

    private init(key: ObjectIdentifier) {
        self.key = key
    }

    /// A reader made by `make` joins the readers of `hub` (made, with their thread, if it has
    /// none or theirs is ending), in one step: a stream never has two.
    static func join(_ hub: StreamHub, make: (SRTReaders) -> SRTReader) -> SRTReader {
        let (group, reader, start) = registry.withLock { r in
            let key = ObjectIdentifier(hub)
            let g = r[key] ?? SRTReaders(key: key)
            r[key] = g
            let reader = make(g)
            let start = g.lock.withLock {
                g.members.append(reader)
                defer { g.started = true }
                return !g.started
            }
            return (g, reader, start)
        }
        if start {
            let thread = Thread { group.run() }
            thread.name = "srt-readers"
            thread.start()
        } else {
            group.wake()
        }
        return reader
    }

    /// A packet was queued for one of the readers.
    func wake() {
        guard !woken.exchange(true, ordering: .acquiringAndReleasing) else { return }
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            if !woken.load(ordering: .acquiring) { _ = condition.wait(until: Date().addingTimeInterval(0.25)) }
            condition.unlock()
            woken.store(false, ordering: .releasing)
            let now = MonotonicClock.nanoseconds()
            let current = lock.withLock { members }
            let left = current.filter { !$0.pump(now: now) }
            guard !left.isEmpty else { continue }
            let done = Self.registry.withLock { r -> Bool in
                lock.withLock {
                    members.removeAll { m in left.contains { $0 === m } }
                    guard members.isEmpty else { return false }
                    started = false
                    if r[key] === self { r[key] = nil }
                    return true
                }
            }
            if done { return }
        }
    }
}
