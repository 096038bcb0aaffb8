public import MediaCore
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

/// The low-latency preview: one frame sink, one JPEG encode per stream on a thread of its own,
/// shared by every viewer. Each viewer gets the newest JPEG whenever it can take one, so a slow
/// viewer never delays a fast one.
public final class PreviewService: Sendable {
    public let sinkName = "preview"
    private let hub: StreamHub
    private let settings: Mutex<PreviewSettings>
    private let latest = Mutex<(image: PreviewImage?, waiters: [UInt64: CheckedContinuation<PreviewImage?, Never>])>((nil, [:]))
    private let nextWaiter = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    public let queue: SinkQueue<Frame>

    public init(hub: StreamHub, settings: PreviewSettings) {
        self.hub = hub
        self.settings = Mutex(settings)
        queue = hub.addFrameSink("preview", policy: settings.policy)
    }

    public var current: PreviewImage? { latest.withLock { $0.image } }

    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let t = Thread { [self] in self.run(); self.done.signal() }
        t.name = "preview:\(hub.name)"
        t.start()
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        queue.close()
        _ = done.wait(timeout: .now() + 3)
        let waiters = latest.withLock { l in let w = l.waiters; l.waiters = [:]; return w }
        for (_, w) in waiters { w.resume(returning: nil) }
    }

    /// The next image newer than `sequence`, waiting for it; nil when the preview stops.
    public func next(after sequence: UInt64) async -> PreviewImage? {
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

    private func publish(jpeg: [UInt8], arrival: UInt64, slate: Bool) {
        let waiters: [CheckedContinuation<PreviewImage?, Never>]
        let image: PreviewImage
        (image, waiters) = latest.withLock { l in
            let img = PreviewImage(sequence: (l.image?.sequence ?? 0) + 1, jpeg: jpeg, arrivalNanos: arrival, isSlate: slate)
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
        var lastFrameAt = MonotonicClock.nanoseconds()
        var slateShown = false
        while running.load(ordering: .relaxed) {
            guard let frame = queue.pop(timeout: 0.25) else {
                // No pictures for a while and the source is not live: show a slate, once a second.
                let s = hub.currentStatus
                if s.state != "live" || MonotonicClock.nanoseconds() - lastFrameAt > 3_000_000_000 {
                    if !slateShown || MonotonicClock.nanoseconds() - lastEmit > 1_000_000_000 {
                        if let jpeg = try? Slate.render(width: settings.withLock { $0.width } ?? 640, height: settings.withLock { $0.height } ?? 360, status: s) {
                            publish(jpeg: jpeg, arrival: MonotonicClock.nanoseconds(), slate: true)
                            lastEmit = MonotonicClock.nanoseconds()
                            slateShown = true
                        }
                    }
                }
                continue
            }
            lastFrameAt = MonotonicClock.nanoseconds()
            slateShown = false
            let cfg = settings.withLock { $0 }
            let now = MonotonicClock.nanoseconds()
            if cfg.fps > 0, now - lastEmit < UInt64(1e9 / cfg.fps) * 9 / 10 { continue }
            if let stamp = frame.readStamp() {
                queue.captureLatency.record(milliseconds: stamp.ageMilliseconds)
            }
            let w = (cfg.width ?? frame.width) & ~1, h = (cfg.height ?? frame.height) & ~1
            do {
                if encoder == nil || encoder!.width != w || encoder!.height != h {
                    encoder = try JPEGEncoder(width: w, height: h, quality: cfg.quality)
                }
                let yuv = try scaler.convert(frame, to: .yuvj420p, width: w, height: h)
                let jpeg = try encoder!.encode(yuv)
                publish(jpeg: jpeg, arrival: frame.arrivalNanos, slate: false)
                lastEmit = now
            } catch {
                queue.countDrop(.corrupt)
            }
        }
    }
}

/// The picture shown when a source has no signal: dark, with a red bar whose length grows with
/// the seconds lost (text needs no font: the API and the HTTP header say why).
enum Slate {
    static func render(width: Int, height: Int, status: StreamStatus) throws -> [UInt8] {
        let w = max(64, width & ~1), h = max(64, height & ~1)
        let frame = try Frame(width: w, height: h, format: .yuvj420p)
        let lost = status.since.map { Date().timeIntervalSince($0) } ?? 0
        frame.withUnsafeMutableAVFrame { f in
            let (y, ys) = Frame.plane(f, 0), (u, us) = Frame.plane(f, 1), (v, vs) = Frame.plane(f, 2)
            guard let y, let u, let v else { return }
            for r in 0..<h { (y + r * ys).update(repeating: 40, count: w) }
            for r in 0..<(h / 2) { (u + r * us).update(repeating: 128, count: w / 2); (v + r * vs).update(repeating: 128, count: w / 2) }
            // Red bar: one tenth of the width per 10 s lost, up to the full width.
            let barW = max(8, min(w, Int(Double(w) * min(1, lost / 100))))
            for r in (h / 2 - h / 20)..<(h / 2 + h / 20) { (y + r * ys).update(repeating: 82, count: barW) }
            for r in (h / 4 - h / 40)..<(h / 4 + h / 40) { (v + r * vs).update(repeating: 240, count: barW / 2); (u + r * us).update(repeating: 90, count: barW / 2) }
        }
        return try JPEGEncoder(width: w, height: h, quality: 60).encode(frame)
    }
}
