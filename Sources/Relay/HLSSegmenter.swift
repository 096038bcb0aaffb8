public import MediaCore
public import Logging
import Mux
import Foundation
import Synchronization

/// A stream's HLS republish: a packet sink whose thread re-segments the ingest's packets,
/// without re-encoding, into MPEG-TS or fMP4 segments (and LL-HLS parts) held by an `HLSStore`.
/// Timestamps are made continuous across reconnects and jumps, which are marked with
/// EXT-X-DISCONTINUITY instead.
public final class HLSSegmenter: Sendable {
    public static let sinkName = "hls"
    public let store: HLSStore
    public let queue: SinkQueue<RelayPacket>
    private let settings: HLSSettings
    private let logger: Logger
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let streamName: String

    public init(hub: StreamHub, settings: HLSSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        streamName = hub.name
        store = HLSStore(settings: settings)
        // Lossless up to ~20 s of packets; beyond that, resynchronise at a keyframe (counted).
        queue = hub.addPacketSink(Self.sinkName, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 1200)))
    }

    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let t = Thread { [self] in
            let work = Work(settings: settings, store: store, queue: queue, logger: logger)
            while running.load(ordering: .relaxed) {
                guard let item = queue.pop(timeout: 0.25) else { continue }
                work.process(item)
            }
            // Drain what the ingest handed over before it stopped, then end the playlist.
            while let item = queue.pop(timeout: 0) { work.process(item) }
            work.finish()
            done.signal()
        }
        t.name = "hls:\(streamName)"
        t.start()
    }

    /// Completes the last segment and ends the playlist (EXT-X-ENDLIST). Call after the hub has
    /// stopped, so every packet it took is in.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        _ = done.wait(timeout: .now() + 5)
    }
}

/// The segmenter's state, confined to its thread.
private final class Work {
    let settings: HLSSettings
    let store: HLSStore
    let queue: SinkQueue<RelayPacket>
    let logger: Logger
    var muxer: FragmentMuxer?
    var generation: Int?
    var initURI: String?
    var initCount = 0
    var nextSequence = 0
    /// Added to every timestamp (µs) so the output timeline stays continuous.
    var offset: Int64 = 0
    var rebase = true
    var waitingForKeyframe = true
    var pendingDiscontinuity = false
    var lastEnd: Int64?
    var lastDts: [Int: Int64] = [:]
    var frameDuration: Int64 = 33_333
    var segmentStart: Int64?
    var partStart: Int64?
    var partIndependent = false

    init(settings: HLSSettings, store: HLSStore, queue: SinkQueue<RelayPacket>, logger: Logger) {
        self.settings = settings
        self.store = store
        self.queue = queue
        self.logger = logger
    }

    var segmentTarget: Int64 { Int64(settings.segmentDuration * 1e6) }
    var partTarget: Int64 { Int64(settings.partDuration * 1e6) }
    var lowLatency: Bool { settings.variant == .lowLatency }

    func micros(_ t: Int64, _ tb: TimeBase) -> Int64 { Int64((Double(t) * tb.seconds(1)) * 1e6) }

    func process(_ item: RelayPacket) {
        let p = item.packet, epoch = item.epoch
        if queue.takeDiscontinuity() {
            // The queue dropped packets (this sink fell behind): a gap, then a keyframe.
            closeSegment()
            pendingDiscontinuity = true
        }
        if epoch.generation != generation {
            // A new connection: new parameters, new timestamps.
            closeSegment()
            muxer = nil
            if generation != nil { pendingDiscontinuity = true }
            generation = epoch.generation
            rebase = true
            waitingForKeyframe = true
            lastDts = [:]
        }
        let timing = p.streamIndex == (epoch.videoIndex ?? epoch.streams.first?.index)
        // No timestamp (RTSP before its first sender report): nothing to place it by.
        guard let raw = p.dts ?? p.pts else { return }
        if waitingForKeyframe {
            guard item.isKeyframe else { return }
            waitingForKeyframe = false
        }
        if muxer == nil {
            do {
                let format: FragmentFormat = settings.variant == .mpegts ? .mpegts : .fmp4
                let m = try FragmentMuxer(format: format, streams: epoch.streams)
                muxer = m
                if format == .fmp4 {
                    let uri = "init\(initCount).mp4"
                    initCount += 1
                    initURI = uri
                    store.setInit(uri: uri, data: m.initSegment)
                }
            } catch {
                logger.warning("hls: cannot start a segment", metadata: ["error": "\(error)"])
                waitingForKeyframe = true
                return
            }
        }
        guard let muxer, muxer.carries(streamIndex: p.streamIndex) else { return }
        let dtsIn = micros(raw, p.timeBase)
        let ptsIn = p.pts.map { micros($0, p.timeBase) } ?? dtsIn
        if timing {
            let candidate = dtsIn + offset
            if rebase {
                offset = (lastEnd ?? 0) - dtsIn
                rebase = false
            } else if let last = lastDts[p.streamIndex], let end = lastEnd, candidate <= last || candidate > end + 5_000_000 {
                // Timestamps went backwards or jumped: continue the timeline, mark the gap.
                logger.info("hls: timestamp jump; discontinuity", metadata: ["jump_ms": "\((candidate - end) / 1000)"])
                closeSegment()
                pendingDiscontinuity = true
                offset = end - dtsIn
                lastDts = [:]
                guard item.isKeyframe else { waitingForKeyframe = true; return }
            }
        }
        let dts = dtsIn + offset, pts = ptsIn + offset
        // Never hand the muxer a timestamp that goes backwards in its stream.
        if let last = lastDts[p.streamIndex], dts <= last { return }
        var duration = p.duration > 0 ? micros(p.duration, p.timeBase) : 0
        if timing {
            if duration <= 0 {
                if let fr = epoch.stream(p.streamIndex)?.frameRate, fr > 0 { duration = Int64(1e6 / fr) } else { duration = frameDuration }
            }
            if item.isKeyframe, let start = segmentStart, dts - start >= segmentTarget - 1000 { closeSegment() }
            if segmentStart == nil { openSegment(at: dts, arrivalNanos: p.arrivalNanos) }
            if lowLatency && partStart == nil {
                partStart = dts
                partIndependent = item.isKeyframe
            }
        } else if duration <= 0 {
            duration = 1
        }
        do {
            try muxer.write(p, pts: pts, dts: dts, duration: duration)
        } catch {
            logger.warning("hls: muxing failed; restarting at the next keyframe", metadata: ["error": "\(error)"])
            closeSegment()
            self.muxer = nil
            pendingDiscontinuity = true
            waitingForKeyframe = true
            return
        }
        lastDts[p.streamIndex] = dts
        if timing {
            lastEnd = dts + duration
            frameDuration = duration
            // LL-HLS: close the part as soon as the next frame would not fit in it.
            if lowLatency, let start = partStart, dts + 2 * duration - start > partTarget + 1000 { cutPart() }
        }
    }

    func openSegment(at dts: Int64, arrivalNanos: UInt64) {
        let age = Double(MonotonicClock.nanoseconds() &- arrivalNanos) / 1e9
        let wall = Date().addingTimeInterval(-max(0, age))
        let sequence = nextSequence
        nextSequence += 1
        store.beginSegment(sequence: sequence, uri: "seg\(sequence).\(settings.fileExtension)", programDateTime: wall,
                           discontinuity: pendingDiscontinuity, initURI: settings.variant == .mpegts ? nil : initURI)
        pendingDiscontinuity = false
        segmentStart = dts
    }

    func cutPart() {
        guard let muxer, let start = partStart, let end = lastEnd else { return }
        do {
            let bytes = try muxer.cut()
            store.addPart(duration: Double(end - start) / 1e6, independent: partIndependent, data: bytes)
        } catch {
            logger.warning("hls: cannot cut a part", metadata: ["error": "\(error)"])
        }
        partStart = nil
    }

    func closeSegment() {
        guard let start = segmentStart, let muxer else { segmentStart = nil; partStart = nil; return }
        let duration = Double((lastEnd ?? start) - start) / 1e6
        if lowLatency {
            if partStart != nil { cutPart() }
            store.completeSegment(duration: duration, data: nil)
        } else {
            do {
                store.completeSegment(duration: duration, data: try muxer.cut())
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
