import MediaCore
import Wire
public import Logging
import Mux
import Foundation
import Synchronization

/// A stream's HLS republish: a packet output whose thread re-segments the ingest's packets,
/// without re-encoding, into MPEG-TS or fMP4 segments (and LL-HLS parts) held by an `HLSStore`.
/// Timestamps are made continuous across reconnects and jumps, which are marked with
/// EXT-X-DISCONTINUITY instead. It also writes to `directory` and pushes to `push` when the
/// settings say so: everything HLS is wired here, for the server and for an embedder alike.
public final class HLSSegmenter: PacketOutput, Sendable {
    public static let outputName = "hls"
    public let handle: OutputHandle
    public let store: HLSStore
    /// Uploads to an HTTP origin (`push`), if configured.
    public let pusher: HLSPusher?
    /// Writes into a directory (`directory`), if configured.
    public let directoryWriter: HLSDirectoryWriter?
    private let worker: PacketWorker
    private let offset = Mutex<Int64?>(nil)
    /// Where its recent segments start, for renditions that follow it.
    let boundaries = HLSBoundaries()

    /// The offset its timeline adds to the source's times (µs) now; nil before the first packet.
    public var timelineOffset: Int64? { offset.withLock { $0 } }

    /// - Parameter leader: the segmenter this one follows (a rendition's, its parent's): a
    ///   picture has the same presentation time in both, and a segment starts where the
    ///   leader's does, with the same media sequence number (RFC 8216 §6.2.4: variants'
    ///   matching content has matching timestamps, and players switch by sequence number).
    public init(hub: StreamHub, settings: HLSSettings, leader: (@Sendable () -> HLSSegmenter?)? = nil, logger: Logger) {
        let store = HLSStore(settings: settings)
        self.store = store
        var writer: HLSDirectoryWriter?
        if let dir = settings.directory {
            do {
                let w = try HLSDirectoryWriter(directory: dir, logger: logger)
                store.addOutput { w.handle($0) }
                writer = w
            } catch {
                logger.error("hls: cannot use the directory; HLS is served over HTTP only", metadata: ["directory": "\(dir)", "error": "\(error)"])
            }
        }
        directoryWriter = writer
        if let base = settings.push {
            let p = HLSPusher(base: base, logger: logger)
            store.addOutput { p.handle($0) }
            pusher = p
        } else {
            pusher = nil
        }
        // Lossless up to ~20 s of packets; beyond that, resynchronise at a keyframe (counted).
        let policy = SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 1200))
        // Segments are cut at keyframes, which always wake the thread. LL-HLS is woken for every
        // packet: a part is cut when the frame that fills it arrives (predicting that arrival
        // let network jitter hold parts back by up to 98 ms, p99 43 ms, on an impaired link).
        handle = hub.attachOutput(Self.outputName, kind: .hls, policy: policy, taking: .blocking(batching: settings.variant != .lowLatency))
        let work = Work(settings: settings, store: store, queue: handle.queue, logger: logger)
        if let leader {
            work.timeline.anchor = { leader()?.timelineOffset }
            work.leader = { leader()?.boundaries }
        }
        work.boundaries = boundaries
        work.askKeyframe = { [weak hub] in hub?.requestKeyframe() ?? false }
        worker = PacketWorker(handle: handle, work: work)
        hub.register(self)
        work.onPlaced = { [weak self] o in self?.offset.withLock { $0 = o } }
    }

    public func start() {
        pusher?.start()
        directoryWriter?.start()
        worker.start()
    }

    /// Completes the last segment, ends the playlist (EXT-X-ENDLIST), and lets the origin have
    /// it (bounded).
    public func stop() async {
        await worker.stop()
        await directoryWriter?.stop(timeout: 3)
        await pusher?.stop(timeout: 3)
    }
}

/// The segmenter's state, confined to its thread.
private final class Work: PacketWork {
    let settings: HLSSettings
    let store: HLSStore
    let queue: SinkQueue<RelayPacket>
    let logger: Logger
    let timeline = PacketTimeline()
    /// Told the timeline's offset after each placed packet (read by renditions' segmenters).
    var onPlaced: ((Int64) -> Void)?
    /// Asks the stream's source for a keyframe (a WHIP publisher sends one when asked only);
    /// whether the source takes such requests.
    var askKeyframe: (@Sendable () -> Bool)?
    /// Whether this segment's closing keyframe was asked for, and whether the source will send it.
    var keyframeAsked = false
    var keyframeComing = false
    /// How long before a segment is due its keyframe is asked for: a publisher's round trip and
    /// its encoder's time.
    static let askAhead: Int64 = 200_000
    var placedOffset: Int64?
    /// Told every segment this one begins (read by renditions' segmenters).
    var boundaries: HLSBoundaries?
    /// The leader's boundaries, when this segmenter follows one.
    var leader: (@Sendable () -> HLSBoundaries?)?
    /// Keyframes passed while following, since the last segment began (a leader that cuts
    /// nowhere these fall is not followed for ever).
    var unmatchedKeyframes = 0
    /// When a follower began waiting for its leader's next segment (µs).
    var waitingSince: Int64?
    var muxer: FragmentMuxer?
    var initURI: String?
    var initCount = 0
    var nextSequence = 0
    var pendingDiscontinuity = false
    var segmentStart: Int64?
    var partStart: Int64?
    var partIndependent = false
    /// End of the last timing packet written (the timeline may already be past it).
    var writtenEnd: Int64?
    /// Arrival of the last timing packet written.
    var writtenArrival: UInt64 = 0

    init(settings: HLSSettings, store: HLSStore, queue: SinkQueue<RelayPacket>, logger: Logger) {
        self.settings = settings
        self.store = store
        self.queue = queue
        self.logger = logger
    }

    var segmentTarget: Int64 { Int64(saturating: settings.segmentDuration * 1e6) }
    /// Keyframes a follower lets pass without a leader's segment starting there before it cuts
    /// by its own rule (a leader on another keyframe cadence).
    static let followLimit = 32
    /// How long a follower waits for its leader to reach a keyframe's time (the leader is
    /// woken by the same keyframe; the follower's came through a decoder and an encoder).
    static let leaderWait: Duration = .milliseconds(150)
    /// Microseconds a segment may last and still round to the fixed target duration.
    lazy var maxSegment: Int64 = Int64(saturating: store.snapshot.maxSegmentDuration * 1e6)
    /// Segments cut at a frame that was not a keyframe.
    var cutsWithoutKeyframe = 0
    /// Whether the segment being built began with a keyframe.
    var segmentIndependent = true
    var partTarget: Int64 { Int64(saturating: settings.partDuration * 1e6) }
    var lowLatency: Bool { settings.variant == .lowLatency }

    func process(_ item: RelayPacket) {
        // A video packet with no picture in it (a source cut mid-frame can leave a few bytes of
        // parameter sets or SEI): no player decodes it, so no segment carries it.
        if item.packet.size < 256, item.packet.streamIndex == item.epoch.videoIndex,
           let info = item.epoch.stream(item.packet.streamIndex), info.parameters.isH264,
           !H264.hasSlice(item.packet.data, extradata: info.parameters.extradata) {
            queue.dropTaken(.corrupt)
            return
        }
        // The queue dropped packets (this sink fell behind): a gap, then a keyframe.
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        // Published only when it moves (a start, a gap): nothing per packet.
        if at.timing, timeline.currentOffset != placedOffset {
            placedOffset = timeline.currentOffset
            onPlaced?(timeline.currentOffset)
        }
        if at.gapBefore {
            closeSegment()
            pendingDiscontinuity = true
        }
        if at.newEpoch { closeSegment(); muxer = nil }
        if muxer == nil {
            do {
                let format: FragmentFormat = settings.variant == .mpegts ? .mpegts : .fmp4
                // fMP4's decode times are the timeline's, not rebased to zero for each muxer: a
                // rendition's match its parent's, and a reconnect continues them.
                let m = try FragmentMuxer(format: format, streams: at.epoch.streams, keepsTimes: format == .fmp4)
                muxer = m
                if format == .fmp4 {
                    let uri = "init\(initCount).mp4"
                    initCount += 1
                    initURI = uri
                    store.setInit(uri: uri, data: m.initSegment)
                }
            } catch {
                logger.warning("hls: cannot start a segment", metadata: ["error": "\(error)"])
                timeline.restart()
                return
            }
        }
        guard let muxer, muxer.carries(streamIndex: at.packet.streamIndex) else { return }
        // A follower starts its segments where its leader's start, numbered as they are.
        var leaderSequence: Int?
        if at.timing, at.keyframe, let boundaries = leader?() {
            switch boundaries.segment(startingAt: at.dts, waiting: Self.leaderWait) {
            case .segment(let n):
                leaderSequence = n
                unmatchedKeyframes = 0
            case .none, .unknown:
                // A leader cutting elsewhere, or none running: after a while, this one's own cuts.
                unmatchedKeyframes += 1
            }
        }
        var following = leader != nil && unmatchedKeyframes < Self.followLimit
        if following && segmentStart == nil && leaderSequence == nil && at.timing {
            // Waiting for the leader's next segment: what comes before it is in none, for at
            // most two segments' time (then this one cuts by its own rule).
            let since = waitingSince ?? at.dts
            waitingSince = since
            if at.dts - since <= 2 * maxSegment {
                queue.dropTaken(.resync)
                return
            }
            unmatchedKeyframes = Self.followLimit
            following = false
        }
        if segmentStart == nil && !at.timing && following && leaderSequence == nil { return }
        if at.timing { waitingSince = nil }
        if at.timing {
            if following, let start = segmentStart, at.keyframe {
                if let n = leaderSequence {
                    closeSegment()
                    nextSequence = max(nextSequence, n)
                } else if at.dts + at.duration - start > maxSegment {
                    closeSegment()
                }
            } else if let start = segmentStart {
                // A segment cut without a keyframe ends at the next one, however short: the
                // segments line up with keyframes again at once.
                // The keyframe asked of a publisher ends the segment when it comes, a little early.
                let due = keyframeComing ? segmentTarget - Self.askAhead : segmentTarget - 1000
                if at.keyframe && (at.dts - start >= due || !segmentIndependent) {
                    closeSegment()
                } else if at.dts + at.duration - start > maxSegment {
                    // The keyframe is late, lost or never comes (intra refresh, one IDR): cut
                    // anyway, so that no segment outgrows the target duration and memory stays
                    // bounded; the next segment says it is not independent.
                    closeSegment()
                    cutsWithoutKeyframe += 1
                }
            }
            if segmentStart == nil {
                if let n = leaderSequence { nextSequence = max(nextSequence, n) }
                openSegment(at: at.dts, arrivalNanos: at.packet.arrivalNanos, independent: at.keyframe)
            }
            if let start = segmentStart, !keyframeAsked, at.dts - start >= segmentTarget - Self.askAhead {
                keyframeAsked = true
                keyframeComing = askKeyframe?() ?? false
            }
            if lowLatency && partStart == nil {
                partStart = at.dts
                partIndependent = at.keyframe
            }
        }
        do {
            try muxer.write(at.packet, pts: at.pts, dts: at.dts, duration: at.duration)
        } catch {
            logger.warning("hls: muxing failed; restarting at the next keyframe", metadata: ["error": "\(error)"])
            closeSegment()
            self.muxer = nil
            timeline.restart()
            return
        }
        if at.timing {
            boundaries?.reached(at.dts)
            writtenEnd = at.dts + at.duration
            writtenArrival = at.packet.arrivalNanos
        }
        // LL-HLS: close the part as soon as the next frame would not fit in it.
        if at.timing, lowLatency, let start = partStart, at.dts + 2 * at.duration - start > partTarget + 1000 { cutPart() }
    }

    /// Classic HLS is woken at keyframes only: when the keyframe is late, the segment must still
    /// be cut when it reaches the longest a segment may be, not at the next wake-up (up to a
    /// second later, which players would wait for). The wall-clock moment that media reaches
    /// it, from the last packet written and when it arrived.
    /// Woken also when the segment's keyframe is to be asked for.
    var wakeWithin: Double? {
        guard let close = closeWithin else { return nil }
        guard !keyframeAsked, let ask = dueWithin(segmentTarget &- Self.askAhead) else { return close }
        return min(close, ask)
    }

    var closeWithin: Double? { dueWithin(maxSegment) }

    /// Seconds until the segment's media reaches `length` (µs), from the last packet written
    /// and when it arrived; nil when no classic segment is open.
    func dueWithin(_ length: Int64) -> Double? {
        guard !lowLatency, segmentIndependent, let start = segmentStart, let end = writtenEnd, writtenArrival > 0 else { return nil }
        let mediaLeft = Double(start &+ length &- end) / 1e6
        return mediaLeft - Double(MonotonicClock.nanoseconds() &- writtenArrival) / 1e9
    }

    /// Woken with nothing queued: if the segment is due and its media has not come (the source
    /// stalled or left), it is completed now with what it has, on time. Left open, it would be
    /// due again at every wake-up: the thread would poll every 5 ms for as long as the source is
    /// away (200 wake-ups a second for each offline publisher).
    func idle() {
        if !keyframeAsked, let ask = dueWithin(segmentTarget &- Self.askAhead), ask <= 0.001 {
            keyframeAsked = true
            keyframeComing = askKeyframe?() ?? false
        }
        guard let due = closeWithin, due <= 0.001 else { return }
        closeSegment()
    }

    func openSegment(at dts: Int64, arrivalNanos: UInt64, independent: Bool = true) {
        segmentIndependent = independent
        keyframeAsked = false
        keyframeComing = false
        let age = Double(MonotonicClock.nanoseconds() &- arrivalNanos) / 1e9
        let wall = Date().addingTimeInterval(-max(0, age))
        let sequence = nextSequence
        nextSequence += 1
        boundaries?.began(sequence: sequence, at: dts)
        store.beginSegment(sequence: sequence, uri: "seg\(sequence).\(settings.fileExtension)", programDateTime: wall,
                           discontinuity: pendingDiscontinuity, initURI: settings.variant == .mpegts ? nil : initURI, independent: independent)
        pendingDiscontinuity = false
        segmentStart = dts
    }

    func cutPart() {
        guard let muxer, let start = partStart, let end = writtenEnd else { return }
        do {
            let bytes = try muxer.cut()
            store.addPart(duration: Double(end - start) / 1e6, independent: partIndependent, data: bytes, lastArrivalNanos: writtenArrival)
        } catch {
            logger.warning("hls: cannot cut a part", metadata: ["error": "\(error)"])
        }
        partStart = nil
    }

    func closeSegment() {
        guard let start = segmentStart, let muxer else { segmentStart = nil; partStart = nil; return }
        let duration = Double((writtenEnd ?? start) - start) / 1e6
        if lowLatency {
            if partStart != nil { cutPart() }
            store.completeSegment(duration: duration, data: nil)
        } else {
            do {
                store.completeSegment(duration: duration, data: try muxer.cut(), lastArrivalNanos: writtenArrival)
            } catch {
                logger.warning("hls: cannot complete a segment", metadata: ["error": "\(error)"])
                store.abandonSegment()
            }
        }
        segmentStart = nil
        partStart = nil
    }

    func finish() {
        closeSegment()
        store.end()
    }
}

/// Where a segmenter's recent segments start on its timeline (µs), with their media sequence
/// numbers: a rendition's segmenter starts its own at the same times, with the same numbers.
final class HLSBoundaries: Sendable {
    enum Answer: Equatable {
        /// A segment starts there: its media sequence number.
        case segment(Int)
        /// None does (within the times still remembered).
        case none
        /// Nothing is known yet.
        case unknown

        var isMiss: Bool { if case .segment = self { false } else { true } }
    }

    private let starts = Mutex<[(sequence: Int, at: Int64)]>([])
    /// The latest time written (every packet of every segmenter sets it: no lock).
    private let latest = Atomic<Int64>(.min)
    /// A keyframe this close to a segment's start is that start (timestamps rounded in muxing).
    static let tolerance: Int64 = 2_000

    func began(sequence: Int, at: Int64) {
        starts.withLock { s in
            s.append((sequence, at))
            if s.count > 64 { s.removeFirst(s.count - 64) }
        }
    }

    func reached(_ t: Int64) {
        latest.max(t, ordering: .relaxed)
    }

    /// Whether a segment starts at `t`, once the segmenter has reached `t` (waiting at most
    /// `waiting` for it).
    func segment(startingAt t: Int64, waiting: Duration) -> Answer {
        let end = ContinuousClock.now + waiting
        while true {
            let answer = starts.withLock { s -> Answer in
                if let hit = s.last(where: { abs($0.at &- t) <= Self.tolerance }) { return .segment(hit.sequence) }
                return s.isEmpty ? .unknown : .none
            }
            let behind = answer.isMiss && latest.load(ordering: .relaxed) < t &- Self.tolerance
            guard behind, ContinuousClock.now < end else { return answer }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}
