import Foundation
import Relay
import Synchronization

/// A wall tile's moves between the streams of one camera: the sub stream for a small tile, the
/// main stream for the selected one, the single view and full screen, a rendition that fits.
/// A move is make-before-break (`moveIfNeeded`, `takeOver`), and a sub stream that fails sends
/// its tiles back to the main stream (`subFailed`, `checkSubstreams`). Every change holds the
/// session's `changes` lock.
extension WallSession {
    func substreamRung(_ name: String) -> (stream: String, label: String?)? {
        let subName = Configuration.Substream.streamName(name)
        guard engine.settings(name)?.substream != nil, let sub = engine.hubs[subName], !mainWanted.withLock({ $0.contains(name) }) else { return nil }
        if let failed = subFailed.withLock({ $0[name] }), ContinuousClock.now - failed.at < Self.subRetry { return nil }
        let height = heights.withLock { $0[name] } ?? 0
        let main = engine.hubs[name]?.currentStatus.height ?? 0
        let status = sub.currentStatus
        guard height > 0, main == 0 || height < main, decodesAsIs(status.codec) else { return nil }
        return (subName, "sub stream" + (status.width.flatMap { w in status.height.map { " \(w)x\($0)" } } ?? ""))
    }

    /// Why an H.264 tile plays `source`; nil: the path's own reason (the stream itself).
    func explain(_ name: String, source: String, label: String?, transcode: Bool) -> String? {
        let tall = heights.withLock { $0[name] ?? 0 }
        if source == Configuration.Substream.streamName(name) {
            return "H.264 to WebCodecs: the camera's \(label ?? "sub stream"), for a tile \(tall) px tall"
        }
        if let label, transcode { return "\(Self.codecTitle(engine.hubs[name]?.currentStatus.codec ?? "?")) is not decoded by this page: H.264 made from it: rendition \(label)" }
        let subDown = subFailed.withLock { $0[name] }.map { " (the sub stream failed: \($0.why))" } ?? ""
        if let label { return "H.264 to WebCodecs: rendition \(label), encoded for a tile \(tall) px tall" + subDown }
        return subDown.isEmpty ? nil : "H.264 to WebCodecs: the main stream" + subDown
    }

    /// Moves an H.264 tile to the stream its size and selection now ask for, without a gap: the
    /// new stream's feed starts beside the old one and takes over at its first keyframe (with
    /// the restart flag: the page's decoder starts over on it, its canvas keeps the last
    /// picture); the old one plays until then, and stays if the new one fails.
    func moveIfNeeded(_ name: String) {
        changes.lock(); defer { changes.unlock() }
        guard let tile = tiles.withLock({ $0[name] }), tile.path == .h264 else { return }
        let transcode = !decodesAsIs(engine.hubs[name]?.currentStatus.codec)
        guard let (source, label) = rung(name, transcode: transcode) else { return }
        if source == tile.source { cancelPending(name); return }
        if tile.pending?.source == source { return }
        cancelPending(name)
        // Nothing shown yet: nothing to keep; start on the new stream at once.
        if tile.counters.frames == 0 { restart(name); return }
        guard let hub = engine.hubs[source] else { return }
        let feed = VideoFeed.attach(hub: hub, name: feedName, policy: policy.withLock { $0 })
        let why = explain(name, source: source, label: label, transcode: transcode) ?? choosePath(name).1
        // Registered before its task runs: the task takes over only as this tile's pending move.
        tiles.withLock { t in
            t[name]?.pending = Pending(source: source, task: Task {
                guard let first = await feed.next() else { return }
                if case .unsupported = first {
                    if source == Configuration.Substream.streamName(name) { self.subFailed(name, why: "not H.264") } else { self.cancelPending(name) }
                    return
                }
                guard let old = self.takeOver(name, source: source, feed: feed) else { return }
                // The old pump ends (its feed is closed) before the new stream's first picture goes.
                await old.task.value
                feed.listen(self.listening.withLock { $0 } == name)
                self.send(text: WallServerMessage.path(stream: name, path: WallPath.h264.rawValue, why: why, rendition: label).text)
                await self.pumpVideo(name, source: source, feed: feed, counters: old.counters, first: first)
            }, feed: feed)
        }
    }

    /// The tile's pending move to `source` becomes the tile; the old feed is detached and its
    /// pump cancelled. Returns the tile as it was; nil when the move was called off meanwhile.
    func takeOver(_ name: String, source: String, feed: VideoFeed) -> Tile? {
        changes.lock(); defer { changes.unlock() }
        let old = tiles.withLock { t -> Tile? in
            guard var now = t[name], let p = now.pending, p.source == source, p.feed === feed else { return nil }
            let before = now
            now.source = source
            now.task = p.task
            now.feed = feed
            now.pending = nil
            now.started = ContinuousClock.now
            t[name] = now
            return before
        }
        guard let old else { detach(feed, from: source); return nil }
        old.task.cancel()
        detach(old.feed, from: old.source)
        return old
    }

    /// Ends `feed`: removed from `source`'s hub when it is still this viewer's output there,
    /// else its queue closed (its `next` returns nil).
    func detach(_ feed: VideoFeed?, from source: String) {
        guard let feed else { return }
        if let hub = engine.hubs[source], (hub.output(named: feedName) as? VideoFeed) === feed {
            hub.removeOutput(feedName)
        } else {
            feed.handle.queue.close()
        }
    }

    func cancelPending(_ name: String) {
        changes.lock(); defer { changes.unlock() }
        guard let p = tiles.withLock({ t -> Pending? in
            let p = t[name]?.pending
            t[name]?.pending = nil
            return p
        }) else { return }
        p.task.cancel()
        detach(p.feed, from: p.source)
    }

    /// The sub stream failed this page's tile of `name` (it went down, gave no picture in time,
    /// or is not H.264): the tile plays the main stream (or its rendition), and says why.
    func subFailed(_ name: String, why: String) {
        changes.lock(); defer { changes.unlock() }
        subFailed.withLock { $0[name] = (ContinuousClock.now, String(why.prefix(200))) }
        let sub = Configuration.Substream.streamName(name)
        guard let tile = tiles.withLock({ $0[name] }) else { return }
        if tile.pending?.source == sub { cancelPending(name) }
        if tile.source == sub { tile.counters.frames == 0 ? restart(name) : moveIfNeeded(name) }
    }

    /// Once a second: a sub stream that gave no first picture in time has failed; a tile on the
    /// main stream because its sub stream failed tries it again after `subRetry`.
    func checkSubstreams() {
        changes.lock(); defer { changes.unlock() }
        let now = ContinuousClock.now
        for (name, tile) in tiles.withLock({ $0 }) {
            let sub = Configuration.Substream.streamName(name)
            if let p = tile.pending, p.source == sub, now - p.started > Self.subFirstPicture {
                subFailed(name, why: "no picture within \(Self.subFirstPicture)")
            } else if tile.source == sub, tile.counters.frames == 0, now - tile.started > Self.subFirstPicture {
                subFailed(name, why: "no picture within \(Self.subFirstPicture)")
            } else if let failed = subFailed.withLock({ $0[name] }), now - failed.at >= Self.subRetry {
                subFailed.withLock { _ = $0.removeValue(forKey: name) }
                moveIfNeeded(name)
            }
        }
    }
}
