import Foundation
import Wire
import Hummingbird
import HummingbirdWebSocket
import Logging
import MediaCore
import NIOCore
import Relay
import Synchronization

/// The ops wall's one WebSocket (`/api/wall`): every visible tile of a page over one connection.
///
/// H.264 streams go out as the packets LiveRelay already has (Annex B, no decode, no re-encode)
/// for the page's WebCodecs decoder; other codecs, and pages that cannot decode, get the
/// preview's JPEGs. Each tile of each viewer is an output with its own queue and policy: a
/// viewer whose socket backs up skips to the next keyframe (or the newest picture), counted,
/// and never slows the stream or another viewer. Stream events come over the same socket.
///
/// Client → server (text, JSON):
///   `{"watch": ["cam1", …], "decoders": ["avc1"], "policy": {freshness, depth, max_age_ms}}`
///   — the tiles on screen now (an empty list for a background tab) and what it can decode;
///   `{"fallback": "cam1"}` — its decoder failed on that stream: send JPEG;
///   `{"audio": "cam1"}` — the operator listens to that tile (`""`: to none): its audio too.
/// Server → client (text): `hello` (the streams and their slots), `path` (which path a tile
/// takes and why), `event` (stream up/down), `stats` (each second: per-tile sent, drops).
/// Server → client (binary): `WallFrame` (a 21-byte header, the codec string, the payload):
/// H.264, JPEG, or the listened tile's audio (AAC or Opus as received).
enum WallRoutes {
    static let path = "/api/wall"

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.ws(RouterPath(stringLiteral: path)) { request, context in
            // Cross-site WebSocket hijacking: a page of another origin gets nothing.
            guard sameOrigin(request) else { return .dontUpgrade }
            // Keep at most 16 KiB unsent in the kernel (TCP_NOTSENT_LOWAT; in-flight data still
            // grows with the link): a viewer's backlog then waits in its own queues, where the
            // policy drops it, instead of seconds of video in a socket buffer.
            let notSentLowWater = ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: 25))
            try? await context.channel.setOption(notSentLowWater, value: 16 * 1024).get()
            // And at most 32 KiB waiting in the channel before a tile's write waits.
            try? await context.channel.setOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 8 * 1024, high: 32 * 1024)).get()
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let session = WallSession(engine: engine, outbound: outbound, context: context.requestContext)
            await session.run(inbound: inbound)
        }
    }
}

extension WallRoutes {
    /// No Origin (a script, not a browser), or the one this server is reached at.
    static func sameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority, let url = URL(string: origin), let host = url.host else { return false }
        let port = url.port.map { ":\($0)" } ?? ""
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return bracketed + port == authority || (url.port == nil && (authority == bracketed + ":80" || authority == bracketed + ":443"))
    }
}

enum WallPath: String, Sendable { case h264, jpeg, none }

/// One page's connection: its tiles, each a task that takes from its own feed and writes.
final class WallSession: Sendable {
    private static let nextID = Atomic<UInt64>(0)
    let id: UInt64
    let engine: RelayEngine
    let outbound: WebSocketOutboundWriter
    let streams: [String]
    let logger: Logger
    struct Tile {
        var path: WallPath
        var task: Task<Void, Never>
        var counters: TileCounters
        /// The stream whose packets it plays: the tile's own, its sub stream, or a rendition.
        var source: String
        /// Its H.264 feed on `source` (nil for JPEG and none).
        var feed: VideoFeed?
        var started = ContinuousClock.now
        /// The stream it is moving to, playing the old one until the new one's first keyframe.
        var pending: Pending?
    }
    struct Pending {
        var source: String
        var task: Task<Void, Never>
        var feed: VideoFeed
        var started = ContinuousClock.now
    }
    /// Serializes every change of a tile (start, stop, a move and its takeover, a sub stream's
    /// failure), which the inbound messages, stream events, the stats timer and the pumps make.
    let changes = NSRecursiveLock()
    /// Each tile's height on screen (device pixels), as the page last said.
    let heights = Mutex<[String: Int]>([:])
    let tiles = Mutex<[String: Tile]>([:])
    private let canDecode = Mutex<Set<String>>([])
    let policy = Mutex<SinkPolicy>(VideoFeed.defaultPolicy)
    /// Streams whose page decoder failed: JPEG from now on.
    private let fellBack = Mutex<Set<String>>([])
    /// The tile whose audio this page plays (nil: none; muted by default).
    let listening = Mutex<String?>(nil)
    /// Tiles the page wants at full quality whatever their size (the selected tile, the single
    /// view, full screen): never the sub stream.
    let mainWanted = Mutex<Set<String>>([])
    /// Streams whose sub stream failed for this page, when and why: their tiles play the main
    /// stream, and try the sub stream again after `subRetry`.
    let subFailed = Mutex<[String: (at: ContinuousClock.Instant, why: String)]>([:])
    static let subRetry = Duration.seconds(30)
    /// A sub stream that has not given a tile its first picture in this long has failed it.
    static let subFirstPicture = Duration.seconds(6)
    /// Binary frames sent for each tile over the session, and how many the page said it has
    /// handled (`acks`); nil until the page first acks (a browserless viewer never does).
    private let flow = Mutex<[String: (sent: UInt64, handled: UInt64?)]>([:])
    /// At most this many of a tile's pictures in flight to a page that acks: the page's message
    /// queue is bounded however slow its script (a browser reads its WebSocket regardless).
    static let pageWindow: UInt64 = 12
    /// Text messages, written in the order they were made by one task (stream events must not
    /// overtake each other); small and few, so unbounded is fine.
    private let texts = AsyncStream<String>.makeStream()

    init(engine: RelayEngine, outbound: WebSocketOutboundWriter, context: RelayRequestContext) {
        id = Self.nextID.add(1, ordering: .relaxed).newValue
        self.engine = engine
        self.outbound = outbound
        streams = engine.hubs.keys.sorted().filter { context.mayRead($0) && engine.settings($0)?.partOf == nil }
        logger = context.logger
    }

    func slot(_ stream: String) -> Int? { streams.firstIndex(of: stream) }

    func run(inbound: WebSocketInboundStream) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await text in self.texts.stream { try? await self.outbound.write(.text(text)) }
            }
            group.addTask { await self.sendHello() }
            group.addTask { await self.forwardEvents() }
            group.addTask { await self.sendStats() }
            do {
                for try await message in inbound.messages(maxSize: 64 * 1024) {
                    guard case .text(let text) = message else { continue }
                    handle(text)
                }
            } catch {}
            texts.continuation.finish()
            group.cancelAll()
        }
        stopAll()
    }

    private func handle(_ text: String) {
        let message: WallClientMessage
        do {
            message = try JSONDecoder().decode(WallClientMessage.self, from: Data(text.utf8))
        } catch {
            send(text: WallServerMessage.error(message: "unreadable message: " + PolicyPatch.describe(error)).text)
            return
        }
        if let name = message.fallback, streams.contains(name) {
            fellBack.withLock { _ = $0.insert(name) }
            restart(name)
            return
        }
        if let acks = message.acks {
            flow.withLock { f in
                for (name, n) in acks.prefix(1024) where streams.contains(name) {
                    // Never more than was sent: a page cannot open its own window.
                    f[name, default: (0, nil)].handled = min(n, f[name]?.sent ?? 0)
                }
            }
        }
        if let name = message.behind, let source = tiles.withLock({ $0[name]?.source }) {
            (engine.hubs[source]?.output(named: feedName) as? VideoFeed)?.handle.fellBehind(.pageBehind)
        }
        if let name = message.audio {
            let listen = streams.contains(name) ? name : nil
            listening.withLock { $0 = listen }
            let sources: [String: String] = tiles.withLock { $0.mapValues(\.source) }
            for (stream, source) in sources {
                (engine.hubs[source]?.output(named: feedName) as? VideoFeed)?.listen(stream == listen)
            }
        }
        if let decoders = message.decoders {
            canDecode.withLock { $0 = Set(decoders.prefix(8).map { String($0.prefix(16)) }) }
        }
        if let patch = message.policy {
            switch patch.flatMap({ PolicyPatch.apply($0, to: policy.withLock { $0 }) }) {
            case .success(let p):
                policy.withLock { $0 = p }
                for hub in engine.hubs.values { _ = (hub.output(named: feedName) as? VideoFeed)?.setPolicy(p) }
            case .failure(let e):
                send(text: WallServerMessage.error(message: "policy: " + e.message).text)
            }
        }
        if let main = message.main {
            mainWanted.withLock { $0 = Set(main.prefix(1024)).intersection(streams) }
        }
        if let sizes = message.sizes {
            heights.withLock { h in
                h = [:]
                for (k, v) in sizes.prefix(1024) where streams.contains(k) { h[k] = max(0, min(v, 100_000)) }
            }
        }
        if let watch = message.watch {
            let wanted = Set(watch.prefix(1024)).intersection(streams)
            let current = Set(tiles.withLock { Array($0.keys) })
            for name in current.subtracting(wanted) { stop(name) }
            for name in wanted.subtracting(current) { start(name) }
            // A tile resized (a layout, the single view) or selected whose rung changes moves to
            // it at its next keyframe.
            for name in wanted.intersection(current) { moveIfNeeded(name) }
        }
    }

    var feedName: String { "wall-\(id)" }

    /// The camera's sub stream for a tile smaller than the main picture (not the selected tile,
    /// the single view or full screen), while the sub stream has not failed this page lately and
    /// is H.264 (or not known yet); else the smallest rendition of `name` at least as tall as its
    /// tile on screen; the stream itself when none is, when the page said no size, or for a tile
    /// as tall as the source. `transcode` (the page cannot decode the source's codec): always a
    /// rendition, the tallest when none is tall enough (the H.264 fallback is the source's
    /// size); nil when it has none.
    func rung(_ name: String, transcode: Bool = false) -> (stream: String, label: String?)? {
        if !transcode, let sub = substreamRung(name) { return sub }
        guard let s = engine.settings(name), !s.renditions.isEmpty else { return transcode ? nil : (name, nil) }
        let height = heights.withLock { $0[name] } ?? 0
        let source = engine.hubs[name]?.currentStatus.height ?? 0
        // A rung as tall as the source is the source re-encoded: for a page that must have it only.
        let rungs = s.renditions.filter { transcode || !$0.isFallback }
            .map { (settings: $0, height: $0.height(source: source)) }
            .filter { engine.hubs[RenditionSettings.streamName(name, $0.settings.name)] != nil }
            .sorted { $0.height < $1.height }
        func described(_ r: (settings: RenditionSettings, height: Int)) -> (String, String?) {
            let stream = RenditionSettings.streamName(name, r.settings.name)
            let width = engine.renditions[stream]?.width ?? r.settings.width
            return (stream, r.settings.name + (width.map { " \($0)x\(r.height)" } ?? ""))
        }
        if transcode {
            guard let r = rungs.first(where: { height > 0 && $0.height >= height }) ?? rungs.last else { return nil }
            return described(r)
        }
        guard height > 0 else { return (name, nil) }
        for r in rungs where r.height >= height {
            if source > 0, r.height >= source { break }
            return described(r)
        }
        return (name, nil)
    }

    /// Whether the page takes this codec as it is: H.264 (H.265 is not sent as it is yet, even to a page that decodes it).
    func decodesAsIs(_ codec: String?) -> Bool { codec == nil || codec == "h264" }

    func choosePath(_ name: String) -> (WallPath, String) {
        let hub = engine.hubs[name]
        let codec = hub?.currentStatus.codec
        let avc = canDecode.withLock { $0.contains { $0 == "avc1" } }
        let hasPreview = engine.preview(name) != nil
        if fellBack.withLock({ $0.contains(name) }) {
            return hasPreview ? (.jpeg, "the page could not decode this stream") : (.none, "the page could not decode this stream and it has no preview")
        }
        if avc && decodesAsIs(codec) { return (.h264, "H.264 to WebCodecs, not re-encoded") }
        if avc, let codec, rung(name, transcode: true) != nil { return (.h264, "\(Self.codecTitle(codec)) is not decoded by this page: H.264 made from it") }
        let why = avc ? "\(Self.codecTitle(codec ?? "?")) is not H.264, and the stream has no H.264 fallback (h264_fallback)" : "no WebCodecs H.264 decoder in this page"
        return hasPreview ? (.jpeg, why + ": JPEG from the preview") : (.none, why + ", and the stream has no preview")
    }

    static func codecTitle(_ codec: String) -> String { codec == "hevc" ? "H.265" : codec }

    private func start(_ name: String, path forced: WallPath? = nil, why forcedWhy: String? = nil) {
        changes.lock(); defer { changes.unlock() }
        var (path, why) = choosePath(name)
        if let forced { path = forced; why = forcedWhy ?? why }
        let counters = TileCounters()
        let task: Task<Void, Never>
        var feed: VideoFeed?
        // H.264 tiles take the rendition their size needs (JPEG comes from the stream's preview);
        // a stream the page cannot decode as it is, the H.264 rung that fits.
        let transcode = !decodesAsIs(engine.hubs[name]?.currentStatus.codec)
        let (source, label) = path == .h264 ? (rung(name, transcode: transcode) ?? (name, nil)) : (name, nil)
        if path == .h264 { why = explain(name, source: source, label: label, transcode: transcode) ?? why }
        switch path {
        case .h264:
            guard let hub = engine.hubs[source] else { return }
            let f = VideoFeed.attach(hub: hub, name: feedName, policy: policy.withLock { $0 })
            f.listen(listening.withLock { $0 } == name)
            feed = f
            task = Task { await self.pumpVideo(name, source: source, feed: f, counters: counters) }
        case .jpeg:
            guard let preview = engine.preview(name) else { return }
            task = Task { await self.pumpJPEG(name, preview: preview, counters: counters) }
        case .none:
            task = Task {}
        }
        tiles.withLock { $0[name] = Tile(path: path, task: task, counters: counters, source: source, feed: feed) }
        send(text: WallServerMessage.path(stream: name, path: path.rawValue, why: why, rendition: label).text)
    }

    private func stop(_ name: String) {
        changes.lock(); defer { changes.unlock() }
        guard let tile = tiles.withLock({ $0.removeValue(forKey: name) }) else { return }
        tile.task.cancel()
        detach(tile.feed, from: tile.source)
        if let p = tile.pending {
            p.task.cancel()
            detach(p.feed, from: p.source)
        }
    }

    func restart(_ name: String) {
        changes.lock(); defer { changes.unlock() }
        guard tiles.withLock({ $0[name] != nil }) else { return }
        stop(name)
        start(name)
    }

    private func stopAll() {
        for name in tiles.withLock({ Array($0.keys) }) { stop(name) }
    }

    func pumpVideo(_ name: String, source: String, feed: VideoFeed, counters: TileCounters, first: VideoFeed.Item? = nil) async {
        guard let slot = slot(name) else { return }
        var waiting = first
        // Stopping the tile removes the feed, whose `next` then returns nil.
        while !Task.isCancelled, let item = await Self.take(&waiting, feed) {
                switch item {
                case .unsupported(let codec):
                    // The sub stream is not H.264: the tile goes back to the main stream.
                    if source == Configuration.Substream.streamName(name) {
                        Task { self.subFailed(name, why: "not H.264") }
                        return
                    }
                    // Known only once the source opened: the H.264 fallback, else JPEG.
                    Task {
                        if self.rung(name, transcode: true) != nil { self.restart(name) }
                        else { self.switchTo(name, .jpeg, why: "\(Self.codecTitle(codec)) is not H.264: JPEG from the preview") }
                    }
                    return
                case .audio(let a):
                    let frame = WallFrame.encode(kind: .audio, flags: .key, slot: slot, wallMillis: Self.wallMillis(a.arrivalNanos),
                                                 timestamp: a.timestampMicros, codec: a.configuration, payload: a.data)
                    do { try await outbound.write(.binary(frame)) } catch { return }
                    sent(name)
                    counters.sent(bytes: frame.readableBytes)
                case .chunk(let c):
                    // The page has not handled the last `pageWindow` pictures: this one and the
                    // rest until the next keyframe are skipped (`page_behind`), not queued there.
                    if pageIsBehind(name) {
                        feed.handle.queue.dropTaken(.pageBehind)
                        feed.handle.fellBehind(.pageBehind)
                        continue
                    }
                    // Flag 8: the time field is the sender's capture time (RTCP), not arrival here.
                    var flags: WallFrame.Flags = []
                    if c.isKeyframe { flags.insert(.key) }
                    if c.restart { flags.insert(.restart) }
                    if c.senderWallMillis != nil { flags.insert(.capture) }
                    let frame = WallFrame.encode(kind: .h264, flags: flags, slot: slot, wallMillis: c.senderWallMillis ?? Self.wallMillis(c.arrivalNanos),
                                           timestamp: c.timestampMicros, codec: c.codec, payload: c.data)
                    let began = ContinuousClock.now
                    do { try await outbound.write(.binary(frame)) } catch { return }
                    sent(name)
                    counters.sent(bytes: frame.readableBytes)
                    // A write that had to wait this long means the connection is backed up:
                    // the next picture this viewer gets is the next keyframe.
                    if ContinuousClock.now - began > Self.backedUp { feed.handle.fellBehind() }
                }
        }
    }

    /// `first` once, then the feed's next items.
    private static func take(_ first: inout VideoFeed.Item?, _ feed: VideoFeed) async -> VideoFeed.Item? {
        if let item = first { first = nil; return item }
        return await feed.next()
    }

    /// Longer than a write waits on a connection that keeps up (a few frames' time).
    static let backedUp = Duration.milliseconds(100)

    private func switchTo(_ name: String, _ path: WallPath, why: String) {
        changes.lock(); defer { changes.unlock() }
        guard tiles.withLock({ $0[name] != nil }) else { return }
        stop(name)
        if path == .jpeg && engine.preview(name) == nil {
            start(name, path: WallPath.none, why: why + " (no preview configured)")
        } else {
            start(name, path: path, why: why)
        }
    }

    private func pumpJPEG(_ name: String, preview: PreviewService, counters: TileCounters) async {
        guard let slot = slot(name) else { return }
        var seen: UInt64 = 0
        // The newest picture whenever the socket takes one: a slow viewer skips pictures.
        while !Task.isCancelled, let image = await preview.next(after: seen) {
            if seen > 0 && image.sequence > seen + 1 { counters.dropped(Int(image.sequence - seen - 1)) }
            seen = image.sequence
            let frame = WallFrame.encode(kind: .jpeg, flags: image.isSlate ? .slate : .key, slot: slot, wallMillis: Self.wallMillis(image.arrivalNanos),
                                   timestamp: 0, codec: "", payload: image.jpeg)
            do { try await outbound.write(.binary(frame)) } catch { return }
            sent(name)
            counters.sent(bytes: frame.readableBytes)
        }
    }

    private func sent(_ name: String) { flow.withLock { $0[name, default: (0, nil)].sent &+= 1 } }

    /// More than `pageWindow` of the tile's frames sent and not yet handled by a page that acks.
    private func pageIsBehind(_ name: String) -> Bool {
        flow.withLock { f in
            guard let e = f[name], let handled = e.handled else { return false }
            return e.sent &- handled >= Self.pageWindow
        }
    }

    private func sendHello() async {
        let hubs = engine.hubs
        let list: [WallServerMessage.Tile] = streams.compactMap { name in
            guard let s = hubs[name]?.currentStatus, let slot = slot(name) else { return nil }
            return WallServerMessage.Tile(name: name, slot: slot, title: s.title ?? name, state: s.state.rawValue,
                                          preview: engine.preview(name) != nil, hls: engine.hls(name) != nil, codec: s.codec,
                                          attempt: s.reconnectAttempt, lostSince: s.signalLostSince.map { $0.timeIntervalSince1970 * 1000 })
        }
        send(text: WallServerMessage.hello(streams: list, viewer: feedName).text)
    }

    private func forwardEvents() async {
        for await e in engine.events.subscribe() where e.kind.changesState || e.kind == .talkStarted || e.kind == .talkEnded {
            // A tile's sub stream went down: the tile goes back to the main stream.
            if e.kind == .reconnecting || e.kind == .stopped, let main = engine.settings(e.stream).flatMap({ $0.isSubstream ? $0.partOf : nil }),
               tiles.withLock({ $0[main]?.source == e.stream || $0[main]?.pending?.source == e.stream }) {
                subFailed(main, why: e.detail ?? e.kind.rawValue)
            }
            guard streams.contains(e.stream) else { continue }
            send(text: WallServerMessage.event(stream: e.stream, kind: e.kind.rawValue, at: e.at.timeIntervalSince1970 * 1000,
                                               attempt: e.attempt, connection: e.connection, detail: e.detail,
                                               by: e.details?["by"], session: e.details?["session"]).text)
            if Task.isCancelled { return }
        }
    }

    private func sendStats() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            checkSubstreams()
            let snapshot = tiles.withLock { $0.mapValues { ($0.path, $0.counters, $0.source) } }
            var out: [String: WallServerMessage.TileStats] = [:]
            for (name, (path, counters, source)) in snapshot {
                var d = WallServerMessage.TileStats(path: path.rawValue, sent: counters.frames, bytes: counters.bytes, dropped: counters.drops)
                // The tile's feed is on the stream it plays (a rendition or the sub stream).
                if path == .h264, let feed = engine.hubs[source]?.output(named: feedName) as? VideoFeed {
                    let c = feed.handle.queue.counters
                    d.dropped = c.droppedTotal
                    d.droppedByReason = c.dropped.byName
                    d.queued = feed.handle.queue.depth
                }
                if let hub = engine.hubs[name] {
                    let s = hub.currentStatus
                    d.state = s.state.rawValue
                    d.fpsIn = s.fpsIn
                }
                out[name] = d
            }
            send(text: WallServerMessage.stats(tiles: out).text)
        }
    }

    /// Text messages are small and rare: queued for the text writer, never holding a tile up.
    func send(text: String) {
        texts.continuation.yield(text)
    }


    /// A monotonic arrival time on the wall clock, for a page on another machine's clock.
    static func wallMillis(_ arrivalNanos: UInt64) -> Double {
        let now = MonotonicClock.nanoseconds()
        let age = now > arrivalNanos ? Double(now - arrivalNanos) / 1e6 : 0
        return Date().timeIntervalSince1970 * 1000 - age
    }
}

/// What one tile of one viewer sent and skipped.
final class TileCounters: Sendable {
    private let state = Mutex<(frames: Int, bytes: Int, drops: Int)>((0, 0, 0))
    func sent(bytes: Int) { state.withLock { $0.frames += 1; $0.bytes += bytes } }
    func dropped(_ n: Int) { state.withLock { $0.drops += n } }
    var frames: Int { state.withLock { $0.frames } }
    var bytes: Int { state.withLock { $0.bytes } }
    var drops: Int { state.withLock { $0.drops } }
}
