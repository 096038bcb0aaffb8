public import MediaCore
import Wire
import Decode
import Mux
import Foundation
import Synchronization

/// One JPEG of a stream's preview.
public struct PreviewImage: Sendable {
    public let sequence: UInt64
    public let jpeg: [UInt8]
    /// Monotonic nanoseconds when the source frame arrived.
    public let arrivalNanos: UInt64
    /// True for the "signal lost" slate.
    public let isSlate: Bool
    /// The last clean picture shown again, marked, while the source's pictures are damaged
    /// (freshness `clean`).
    public var isHeld = false
}

/// Settings of a stream's preview.
public struct PreviewSettings: Sendable, Hashable {
    public var width: Int? = nil
    public var height: Int? = nil
    public var fps: Double = 15
    public var quality: Int = 75
    public var policy: SinkPolicy = .preview
    public init() {}
}

/// The low-latency preview: one frame output, one JPEG encode per stream on a thread of its
/// own, shared by every viewer. Each viewer gets the newest JPEG whenever it can take one, so a
/// slow viewer never delays a fast one.
public final class PreviewService: StreamOutput, Sendable {
    public static let outputName = "preview"
    public let name = PreviewService.outputName
    public let kind = OutputKind.preview
    private let hub: StreamHub
    private let settings: Mutex<PreviewSettings>
    private let latest = Mutex<(image: PreviewImage?, waiters: [UInt64: CheckedContinuation<PreviewImage?, Never>])>((nil, [:]))
    private let nextWaiter = Atomic<UInt64>(0)
    /// When a viewer last asked for an image (monotonic nanoseconds): pictures are encoded only
    /// while someone watches.
    private let lastDemand = Atomic<UInt64>(0)
    private let encoded = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private let worker: WorkerThread
    public let queue: SinkQueue<Frame>

    public init(hub: StreamHub, settings: PreviewSettings) {
        self.hub = hub
        self.settings = Mutex(settings)
        let queue = hub.addFrameQueue(Self.outputName, policy: settings.policy)
        self.queue = queue
        worker = WorkerThread(name: "preview:\(hub.name)", wake: { queue.wakeConsumer() })
        hub.register(self)
    }

    public var status: OutputStatus {
        OutputStatus(name: name, kind: kind, state: running.load(ordering: .relaxed) ? .running : (worker.isFinished ? .stopped : .idle), queue: queue)
    }

    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        queue.setPolicy(policy)
        return true
    }

    public var current: PreviewImage? { latest.withLock { $0.image } }

    /// JPEGs encoded from pictures so far (slates not counted).
    public var encodedImages: Int { encoded.load(ordering: .relaxed) }


    /// How long after the last request pictures keep being encoded.
    public static let demandWindowNanos: UInt64 = 2_000_000_000

    /// The newest image if it is fresh (encoded from a picture that arrived within the last
    /// second, or a slate), else the next one, waiting up to `timeout`; with no viewer nothing
    /// is encoded, so a snapshot asks for a fresh picture.
    public func snapshot(timeout: Double) async -> PreviewImage? {
        let now = MonotonicClock.nanoseconds()
        lastDemand.store(now, ordering: .relaxed)
        hub.demand()
        let cur = current
        // An on-demand source is connecting for this request: wait for its first picture
        // rather than answer with the slate.
        let onDemand = hub.onDemandIdle != nil
        if let cur, (cur.isSlate && !onDemand) || (!cur.isSlate && now &- cur.arrivalNanos < 1_000_000_000) { return cur }
        let next: PreviewImage?? = await withTaskGroup(of: PreviewImage??.self) { g in
            g.addTask {
                var after = cur?.sequence ?? 0
                while true {
                    guard let image = await self.next(after: after) else { return .some(nil) }
                    if !image.isSlate || !onDemand { return .some(image) }
                    after = image.sequence
                }
            }
            g.addTask { try? await Task.sleep(nanoseconds: PeerNumber.nanoseconds(timeout)); return .none }
            let first = await g.next() ?? .none
            g.cancelAll()
            return first
        }
        return (next ?? nil) ?? cur
    }

    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        worker.start { [self] in self.run() }
    }

    /// Ends the encoding thread and answers every waiting viewer (their responses end).
    public func stop() async {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        await worker.stop(timeout: 3)
        let waiters = latest.withLock { l in let w = l.waiters; l.waiters = [:]; return w }
        for (_, w) in waiters { w.resume(returning: nil) }
    }

    /// The next image newer than `sequence`, waiting for it; nil when the preview stops.
    public func next(after sequence: UInt64) async -> PreviewImage? {
        lastDemand.store(MonotonicClock.nanoseconds(), ordering: .relaxed)
        hub.demand()
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<PreviewImage?, Never>) in
                let ready: PreviewImage?? = latest.withLock { l in
                    if let img = l.image, img.sequence > sequence { return .some(img) }
                    if !running.load(ordering: .relaxed) { return .some(nil) }
                    l.waiters[id] = c
                    return .none
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            let w = latest.withLock { $0.waiters.removeValue(forKey: id) }
            w?.resume(returning: nil)
        }
    }

    /// Someone asked for an image lately, or a viewer is waiting for the next one now (after a
    /// long hold nobody has asked for a while, yet the MJPEG viewers still wait).
    private func isWatched(_ now: UInt64) -> Bool {
        now &- lastDemand.load(ordering: .relaxed) < Self.demandWindowNanos || latest.withLock { !$0.waiters.isEmpty }
    }

    private func publish(jpeg: [UInt8], arrival: UInt64, slate: Bool, held: Bool = false) {
        let waiters: [CheckedContinuation<PreviewImage?, Never>]
        let image: PreviewImage
        (image, waiters) = latest.withLock { l in
            let img = PreviewImage(sequence: (l.image?.sequence ?? 0) + 1, jpeg: jpeg, arrivalNanos: arrival, isSlate: slate, isHeld: held)
            l.image = img
            let w = Array(l.waiters.values)
            l.waiters = [:]
            return (img, w)
        }
        for w in waiters { w.resume(returning: image) }
    }

    private func run() {
        let scaler = Scaler()
        var encoder: JPEGEncoder?
        var lastEmit: UInt64 = 0
        // The frame-rate limit is a token bucket (two frames deep): frames that network jitter
        // bunches together still go out, while the average stays at the configured rate.
        var tokens = 2.0
        var lastRefill = MonotonicClock.nanoseconds()
        var lastFrameAt = MonotonicClock.nanoseconds()
        var lastFrameDate: Date?
        var slateShown = false
        /// Freshness `clean`: the last clean picture, shown again (marked) while damage lasts.
        var lastClean: Frame?
        var holding = false
        /// One JPEG of `frame` at the preview's size (a held picture labelled).
        func jpeg(_ frame: Frame, _ cfg: PreviewSettings, label: String? = nil) throws -> [UInt8] {
            let w = (cfg.width ?? frame.width) & ~1, h = (cfg.height ?? frame.height) & ~1
            if encoder == nil || encoder!.width != w || encoder!.height != h {
                encoder = try JPEGEncoder(width: w, height: h, quality: cfg.quality)
            }
            let yuv = try scaler.convert(frame, to: .yuvj420p, width: w, height: h)
            return try encoder!.encode(label.map { try Slate.labelled(yuv, text: $0) } ?? yuv)
        }
        while !worker.isStopRequested {
            guard let frame = queue.pop(timeout: 0.25) else {
                // No pictures for a while and the source is not live: show a slate, once a second.
                let s = hub.currentStatus
                // An idle on-demand source is not lost: nobody watches, nothing to show.
                if s.state == .idle { continue }
                if s.state != .live || MonotonicClock.nanoseconds() - lastFrameAt > 3_000_000_000 {
                    if !slateShown || MonotonicClock.nanoseconds() - lastEmit > 1_000_000_000 {
                        let size = settings.withLock { ($0.width ?? 640, $0.height ?? 360) }
                        if let jpeg = try? SignalLostSlate.jpeg(width: size.0, height: size.1, status: s, lastFrame: lastFrameDate) {
                            publish(jpeg: jpeg, arrival: MonotonicClock.nanoseconds(), slate: true)
                            lastEmit = MonotonicClock.nanoseconds()
                            slateShown = true
                        }
                    }
                }
                continue
            }
            lastFrameAt = MonotonicClock.nanoseconds()
            lastFrameDate = Date()
            slateShown = false
            let cfg = settings.withLock { $0 }
            let now = MonotonicClock.nanoseconds()
            if case .clean = queue.policy.freshness {
                if frame.isDamaged {
                    // Not shown: the last clean picture stays, marked as held, once.
                    queue.dropTaken(.damaged)
                    if !holding, let last = lastClean, isWatched(now) {
                        // On failure the viewers keep the last clean picture, unmarked.
                        if let j = try? jpeg(last, cfg, label: "HELD: DAMAGED SOURCE") {
                            publish(jpeg: j, arrival: last.arrivalNanos, slate: false, held: true)
                        }
                    }
                    holding = true
                    continue
                }
                lastClean = frame
            } else {
                lastClean = nil
            }
            holding = false
            if cfg.fps > 0 {
                tokens = min(2, tokens + Double(now - lastRefill) / 1e9 * cfg.fps)
                lastRefill = now
                guard tokens >= 1 else { continue }
                tokens -= 1
            }
            if let age = hub.captureAge?(frame) { queue.captureLatency.record(milliseconds: age) }
            // Nobody watching: no scaling, no JPEG (the decoder keeps going, so the first viewer
            // gets the next picture, not the next keyframe).
            guard isWatched(now) else { continue }
            do {
                let bytes = try jpeg(frame, cfg)
                encoded.add(1, ordering: .relaxed)
                publish(jpeg: bytes, arrival: frame.arrivalNanos, slate: false)
                lastEmit = now
            } catch {
                queue.dropTaken(.corrupt)
            }
        }
    }
}

