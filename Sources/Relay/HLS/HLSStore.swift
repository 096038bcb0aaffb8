public import Foundation
import Wire
import MediaCore
import Synchronization

/// What the HLS store tells the places HLS also goes (a directory, an HTTP origin).
public enum HLSOutput: Sendable {
    case file(name: String, data: [UInt8])
    case removed(name: String)
    case playlist(text: String)
}

/// An answer to a playlist request.
public enum HLSPlaylistAnswer: Sendable, Equatable {
    case playlist(String)
    case badRequest(String)
    case notYet
}

/// A stream's HLS in memory: the playlist, its segments, parts and init segments, with the
/// waiting LL-HLS needs (blocking playlist reload, preload-hinted parts). Written by the
/// segmenter's thread, read by any number of HTTP requests.
public final class HLSStore: Sendable {
    struct Waiter {
        let ready: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    struct State {
        var playlist: HLSPlaylist
        var inits: [String: [UInt8]] = [:]
        /// Segments removed from the window, still served (and still in the directory or at the
        /// origin) until `until`: RFC 8216 §6.2.2.
        var retired: [Retired] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// When media was last added (the clock's nanoseconds): how stale the window is.
        var lastMedia: UInt64?
    }

    /// A segment out of the playlist that clients may still fetch: for its own duration plus
    /// that of the playlist that listed it (RFC 8216 §6.2.2: a client that loaded that playlist
    /// just before the change may still be reading its way down to this segment).
    struct Retired {
        /// As it was listed: served from its own bytes or parts, as a listed one is.
        let segment: HLSSegment
        let until: UInt64
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> UInt64
    public let settings: HLSSettings
    private let outputs = Mutex<[@Sendable (HLSOutput) -> Void]>([])
    /// From the arrival of a part's (or, without parts, a segment's) last frame to the moment
    /// it is listed: what LiveRelay adds before a player can fetch it.
    public let availability = LatencyHistogram()

    public init(settings: HLSSettings, eventMemoryBudget: Int = 256 << 20, clock: (@Sendable () -> UInt64)? = nil) {
        self.settings = settings
        self.clock = clock ?? { MonotonicClock.nanoseconds() }
        self.eventMemoryBudget = eventMemoryBudget
        state = Mutex(State(playlist: HLSPlaylist(settings: settings)))
    }

    /// Calls `observer` (on the segmenter's thread) for every file written or removed.
    public func addOutput(_ observer: @escaping @Sendable (HLSOutput) -> Void) {
        outputs.withLock { $0.append(observer) }
    }

    public var snapshot: HLSPlaylist { state.withLock { $0.playlist } }
    /// The playlist's target duration now (what a cache's lifetimes are counted in).
    public var targetDuration: Int { state.withLock { $0.playlist.targetDuration } }

    /// Whether any place besides HTTP takes the files (`addOutput`).
    private var observed: Bool { outputs.withLock { !$0.isEmpty } }

    // MARK: written by the segmenter

    func setInit(uri: String, data: [UInt8]) {
        change { s in s.inits[uri] = data; return [.file(name: uri, data: data)] }
    }

    func beginSegment(sequence: Int, uri: String, programDateTime: Date, discontinuity: Bool, initURI: String?, independent: Bool = true) {
        let now = clock()
        change { s in
            var out: [HLSOutput] = []
            // The stream comes back after a silence longer than the window (an on-demand source
            // or a rendition nobody watched): everything listed is stale. A player joining now
            // would start at that stale edge and play minutes-old pictures before the new ones,
            // so the window starts again with the new segment; the old ones are retired (still
            // served for their RFC 8216 §6.2.2 time) and a new player waits for the first new
            // segment, as on a first start.
            // (Whether or not the segmenter saw a gap in the timestamps: a rendition's restart
            // keeps the parent's clock.)
            // So does a segment numbered past the next (a rendition that follows its parent's
            // numbers after a pause): a playlist's segments are numbered one after another.
            var discontinuity = discontinuity
            if settings.playlist == .sliding, let last = s.lastMedia, let previous = s.playlist.segments.last {
                let window = s.playlist.segments.reduce(0.0) { $0 + ($1.complete ? $1.duration : 0) }
                if Double(now &- last) / 1e9 > window || sequence != previous.sequence + 1 {
                    discontinuity = true
                    while let gone = s.playlist.segments.first {
                        s.playlist.segments.removeFirst()
                        if gone.discontinuity { s.playlist.discontinuitySequence += 1 }
                        guard gone.complete else { continue }
                        s.retired.append(Retired(segment: gone, until: now &+ PeerNumber.nanoseconds(gone.duration + window)))
                    }
                    out += Self.expire(&s, now: now)
                }
            }
            s.playlist.segments.append(HLSSegment(sequence: sequence, duration: 0, uri: uri, data: [], parts: [], programDateTime: programDateTime,
                                                  discontinuity: discontinuity, initURI: initURI, complete: false, independent: independent))
            return out
        }
    }

    func addPart(duration: Double, independent: Bool, data: [UInt8], lastArrivalNanos: UInt64) {
        availability.record(nanoseconds: MonotonicClock.nanoseconds() &- lastArrivalNanos)
        let observed = observed
        let mediaAt = mediaTime(arrival: lastArrivalNanos)
        change { s in
            s.lastMedia = max(s.lastMedia ?? 0, mediaAt)
            guard var last = s.playlist.segments.popLast() else { return [] }
            let index = last.parts.count
            let uri = HLSPlaylist.partURI(msn: last.sequence, part: index)
            last.parts.append(HLSPart(index: index, duration: duration, independent: independent, uri: uri, data: data))
            last.duration += duration
            s.playlist.segments.append(last)
            // The static playlist is rendered only for a place that takes it (a directory, an
            // origin); HTTP clients get theirs rendered on request.
            guard observed else { return [] }
            return [.file(name: uri, data: data), .playlist(text: s.playlist.render(forStaticServer: true))]
        }
    }

    /// When a frame that arrived at `arrival` (monotonic nanoseconds) came, on this store's
    /// clock: a segment left open across a stop and closed at the restart is old media.
    /// 0: not known, taken as now.
    private func mediaTime(arrival: UInt64) -> UInt64 {
        guard arrival > 0 else { return clock() }
        let age = MonotonicClock.nanoseconds() &- arrival
        let now = clock()
        return age < now ? now - age : 0
    }

    /// Completes the segment being built. `data` is its bytes when it was not built from parts.
    func completeSegment(duration: Double, data: [UInt8]?, lastArrivalNanos: UInt64? = nil) {
        if let a = lastArrivalNanos { availability.record(nanoseconds: MonotonicClock.nanoseconds() &- a) }
        let observed = observed
        // A segment's media: its last frame's arrival; parts were counted as they came.
        let mediaAt: UInt64? = lastArrivalNanos.map { mediaTime(arrival: $0) } ?? (data != nil ? clock() : nil)
        change { s in
            if let mediaAt { s.lastMedia = max(s.lastMedia ?? 0, mediaAt) }
            guard var last = s.playlist.segments.popLast() else { return [] }
            if let data { last.data = data }
            last.duration = duration
            last.complete = true
            s.playlist.segments.append(last)
            // Never expected to move (the segmenter cuts in time); kept truthful if it must.
            s.playlist.targetDuration = max(s.playlist.targetDuration, Int(saturating: duration.rounded()))
            var out: [HLSOutput] = observed ? [.file(name: last.uri, data: last.bytes)] : []
            if settings.playlist == .sliding {
                let now = clock()
                // The longest playlist that listed the segments leaving now: the one before this
                // change (with parts, the segment just completed was listed in it already).
                let listed = s.playlist.segments.reduce(0.0) { $0 + ($1.complete ? $1.duration : 0) } - (last.parts.isEmpty ? last.duration : 0)
                // The window, and no segment without a keyframe at its head while a later one
                // has one: a player that learns the codec from the first listed segment
                // (Chromium's own HLS player) needs a keyframe there, or it fails for good.
                while s.playlist.segments.filter(\.complete).count > settings.segmentCount
                        || (s.playlist.segments.first.map { $0.complete && !$0.independent } == true
                            && s.playlist.segments.dropFirst().contains { $0.complete && $0.independent }) {
                    let gone = s.playlist.segments.removeFirst()
                    if gone.discontinuity { s.playlist.discontinuitySequence += 1 }
                    let hold = PeerNumber.nanoseconds(gone.duration + listed)
                    s.retired.append(Retired(segment: gone, until: now &+ hold))
                }
                out += Self.expire(&s, now: now)
            } else {
                Self.evictOldMedia(&s, keep: settings.segmentCount, budget: eventMemoryBudget)
            }
            if observed { out.append(.playlist(text: s.playlist.render(forStaticServer: true))) }
            return out
        }
    }

    /// Retired segments whose time is up: gone from memory, the directory and the origin, with
    /// their parts, and their init segment once nothing listed or retired uses it.
    static func expire(_ s: inout State, now: UInt64) -> [HLSOutput] {
        var out: [HLSOutput] = []
        while let first = s.retired.first, first.until <= now {
            s.retired.removeFirst()
            let gone = first.segment
            out.append(.removed(name: gone.uri))
            for p in gone.parts { out.append(.removed(name: p.uri)) }
            if let m = gone.initURI, !s.playlist.segments.contains(where: { $0.initURI == m }), !s.retired.contains(where: { $0.segment.initURI == m }) {
                s.inits[m] = nil
                out.append(.removed(name: m))
            }
        }
        return out
    }

    /// Bytes of media an event playlist keeps in memory: beyond the newest `segmentCount`
    /// segments and this budget, older segments are served from the `directory` (when one is
    /// written) and are otherwise gone; the playlist still lists them.
    public let eventMemoryBudget: Int

    static func evictOldMedia(_ s: inout State, keep: Int, budget: Int) {
        var total = 0
        var kept = 0
        for i in s.playlist.segments.indices.reversed() where s.playlist.segments[i].complete {
            let size = s.playlist.segments[i].data.count + s.playlist.segments[i].parts.reduce(0) { $0 + $1.data.count }
            kept += 1
            total += size
            if kept > keep && total > budget && size > 0 {
                s.playlist.segments[i].data = []
                s.playlist.segments[i].parts = s.playlist.segments[i].parts.map { HLSPart(index: $0.index, duration: $0.duration, independent: $0.independent, uri: $0.uri, data: []) }
                s.playlist.segments[i].evicted = true
            }
        }
    }

    /// Drops a segment that was begun but got no media (the stream stopped at once).
    func abandonSegment() {
        change { s in
            if let last = s.playlist.segments.last, !last.complete, last.parts.isEmpty { s.playlist.segments.removeLast() }
            return []
        }
    }

    /// The stream ended: EXT-X-ENDLIST, and every waiting request answered.
    func end() {
        change { s in
            s.playlist.ended = true
            return [.playlist(text: s.playlist.render(forStaticServer: true))]
        }
    }

    private func change(_ body: (inout State) -> [HLSOutput]) {
        let (ready, events): ([CheckedContinuation<Void, Never>], [HLSOutput]) = state.withLock { s in
            let events = body(&s)
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, w) in s.waiters where s.playlist.ended || w.ready(s) {
                ready.append(w.continuation)
                s.waiters[id] = nil
            }
            return (ready, events)
        }
        for r in ready { r.resume() }
        if !events.isEmpty {
            let observers = outputs.withLock { $0 }
            for e in events { for o in observers { o(e) } }
        }
    }

    // MARK: read by HTTP

    /// Waits until `ready` holds (or the stream ends), at most `timeout` seconds.
    private func wait(timeout: Double, until ready: @escaping @Sendable (State) -> Bool) async {
        let id = state.withLock { s -> UInt64 in s.nextWaiter += 1; return s.nextWaiter }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { s -> Bool in
                        if s.playlist.ended || ready(s) { return true }
                        s.waiters[id] = Waiter(ready: ready, continuation: c)
                        return false
                    }
                    if now { c.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: PeerNumber.nanoseconds(timeout))
                let w = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                w?.continuation.resume()
            }
            await group.next()
            group.cancelAll()
            // Whichever finished first, the other is released: the waiter is gone or resumed.
            let w = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            w?.continuation.resume()
        }
    }

    /// The playlist; with `msn` (and `part`), an LL-HLS blocking reload: it answers once that
    /// segment (part) exists, or after three target durations. A request too far ahead is a 400.
    /// With `skip` (LL-HLS `_HLS_skip=YES`), a delta update.
    public func playlist(msn: Int?, part: Int?, skip: Bool = false) async -> HLSPlaylistAnswer {
        if let msn, settings.variant == .lowLatency {
            if part != nil && part! < 0 || msn < 0 { return .badRequest("_HLS_msn and _HLS_part must not be negative") }
            let (last, target) = state.withLock { ($0.playlist.lastPosition, $0.playlist.targetDuration) }
            if let last, msn > last.msn + 2 {
                return .badRequest("_HLS_msn=\(msn) is too far ahead of the live edge (segment \(last.msn))")
            }
            await wait(timeout: Double(target) * 3) { s in s.playlist.has(msn: msn, part: part) }
        }
        return state.withLock { s in Self.hasContent(s) || s.playlist.ended ? .playlist(s.playlist.render(skip: skip)) : .notYet }
    }

    /// Any player can start: a complete segment (players that know no parts need one).
    private static func hasContent(_ s: State) -> Bool {
        s.playlist.segments.contains { $0.complete }
    }

    /// Waits for the first segment (or part) to exist.
    public func waitForContent(timeout: Double) async {
        await wait(timeout: timeout) { s in Self.hasContent(s) }
    }

    /// Whether no media came for `seconds`: an on-demand source or a rendition that nobody
    /// watched has stopped, and what the playlist lists is stale.
    public func isStale(after seconds: Double) -> Bool {
        let now = clock()
        return state.withLock { s in s.lastMedia.map { Double(now &- $0) / 1e9 > seconds } ?? false }
    }

    /// Waits for a segment begun after now to be complete: a player that starts a little behind
    /// the edge (LL-HLS: the part hold-back) then starts among new pictures, not in a segment
    /// left from before the stop.
    public func waitForFreshContent(timeout: Double) async {
        let from = state.withLock { s in (s.playlist.segments.last?.sequence ?? -1) + 1 }
        await wait(timeout: timeout) { s in s.playlist.segments.contains { $0.complete && $0.sequence >= from } }
    }

    /// A segment, part or init segment by name. A part announced by the preload hint (or just
    /// after it) is waited for; anything else that does not exist is nil at once.
    public func resource(_ name: String) async -> (data: [UInt8], contentType: String)? {
        if name.hasPrefix("part"), let (msn, part) = Self.parsePart(name) {
            let canCome: Bool = state.withLock { s in
                guard let last = s.playlist.lastPosition, !s.playlist.ended else { return false }
                if msn == last.msn && !s.playlist.segments.last!.complete { return part <= (last.part ?? -1) + 2 }
                return msn == last.msn + 1 && part <= 1
            }
            if canCome {
                await wait(timeout: settings.partDuration * 3 + Double(snapshot.targetDuration)) { s in
                    s.playlist.segments.contains { $0.sequence == msn && ($0.parts.contains { $0.index == part } || $0.complete) }
                        || s.playlist.segments.contains { $0.sequence > msn }
                }
            }
        }
        let type = name.hasSuffix(".ts") ? "video/mp2t" : "video/iso.segment"
        let found: (data: [UInt8], parts: [HLSPart], type: String)? = state.withLock { s in
            if let d = s.inits[name] { return (d, [], "video/mp4") }
            func match(_ seg: HLSSegment) -> (data: [UInt8], parts: [HLSPart], type: String)? {
                if seg.uri == name && seg.complete { return (seg.data, seg.parts, type) }
                if let p = seg.parts.first(where: { $0.uri == name }) { return (p.data, [], type) }
                return nil
            }
            for seg in s.playlist.segments.reversed() { if let m = match(seg) { return m } }
            // Out of the playlist but still within its RFC 8216 §6.2.2 time.
            for r in s.retired { if let m = match(r.segment) { return m } }
            return nil
        }
        guard let found else { return nil }
        if found.data.isEmpty && found.parts.allSatisfy({ $0.data.isEmpty }) {
            // Evicted from memory (an old segment of an event playlist): from the directory, if any.
            guard let dir = settings.directory, let d = FileManager.default.contents(atPath: dir + "/" + name) else { return nil }
            return ([UInt8](d), found.type)
        }
        // A segment made of parts is joined here, outside the lock.
        return (found.parts.isEmpty ? found.data : found.parts.flatMap(\.data), found.type)
    }

    /// A part that will never exist: its segment was finished without it (a preload hint that
    /// the next keyframe overtook). Its 404 may be kept by a cache: it stays true.
    public func neverComing(_ name: String) -> Bool {
        guard let (msn, part) = Self.parsePart(name) else { return false }
        return state.withLock { s in
            s.playlist.segments.contains { $0.sequence > msn }
                || s.playlist.segments.contains { $0.sequence == msn && $0.complete && !$0.parts.contains { $0.index == part } }
        }
    }

    package static func parsePart(_ name: String) -> (Int, Int)? {
        guard name.hasPrefix("part"), name.hasSuffix(".m4s") else { return nil }
        let nums = name.dropFirst(4).dropLast(4).split(separator: ".")
        guard nums.count == 2, let m = Int(nums[0]), let p = Int(nums[1]) else { return nil }
        return (m, p)
    }
}
