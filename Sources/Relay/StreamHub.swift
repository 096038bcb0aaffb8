public import MediaCore
public import Demux
public import Decode
public import Logging
public import Foundation
import Synchronization

/// What the API shows of a stream.
public struct StreamStatus: Sendable, Codable {
    public var name: String
    public var title: String?
    public var source: String
    public var state: String
    public var reconnectAttempt: Int?
    public var lastError: String?
    public var since: Date?
    /// When the picture was last lost (or the stream started without one); nil while live.
    public var signalLostSince: Date?
    public var codec: String?
    public var width: Int?
    public var height: Int?
    public var fpsIn: Double
    public var decoderPath: String?
    public var fallbackReason: String?
    public var decoding: Bool
    public var connections: Int
    public var arrivalToDecoded: LatencySummary
    public var decodeCounters: DecodeCounters?
    /// A realtime file's pacing: `packets` (each when due) or `keyframes` (a keyframe interval
    /// together when its keyframe is due: nothing consumes sooner). Nil for other sources.
    public var pacing: String?
}


/// One stream: one ingest (supervised, reconnecting), one decoder while any frame sink is
/// attached, and any number of sinks, each with its own bounded queue and policies. The ingest
/// thread never blocks on a sink.
public final class StreamHub: Sendable {
    public let name: String
    public let sourceURL: String
    public let title: String?
    private let logger: Logger
    private let decoderOptions: DecoderOptions
    private let supervisor: Mutex<SourceSupervisor?> = Mutex(nil)
    private let frameSinks = Mutex(SinkSet<Frame>())
    private let packetSinks = Mutex(SinkSet<RelayPacket>())
    private let status: Mutex<StreamStatus>
    private let ingest = IngestState()
    private let fps = RateMeter()
    public let arrivalToDecoded = LatencyHistogram()
    private let sourceOptions: SourceOptions
    private let backoff: Backoff
    /// Whether a realtime file source may release packets at keyframes: kept in step with the
    /// sinks (no frame sink, every packet sink woken only at keyframes).
    private let pacing = PacingHint()
    /// Serialises `updatePacing`: the last update runs after the last sink change and sees it.
    private let pacingUpdate = Mutex(())

    public init(name: String, source: String, title: String? = nil, sourceOptions: SourceOptions = SourceOptions(),
                decoderOptions: DecoderOptions = DecoderOptions(), backoff: Backoff = Backoff(), logger: Logger) {
        self.name = name
        self.sourceURL = source
        self.title = title
        self.sourceOptions = sourceOptions
        self.decoderOptions = decoderOptions
        self.backoff = backoff
        self.logger = logger
        status = Mutex(StreamStatus(name: name, title: title, source: Redactor.redact(source), state: "connecting", fpsIn: 0,
                                    decoding: false, connections: 0, arrivalToDecoded: LatencySummary(count: 0)))
        status.withLock { $0.signalLostSince = Date() }
    }

    // MARK: sinks

    /// Attaches a frame sink (decoded pictures). Decoding starts with the first one.
    @discardableResult
    public func addFrameSink(_ sinkName: String, policy: SinkPolicy) -> SinkQueue<Frame> {
        // The decoder already puts frames in presentation order (FFmpeg's H.264 decoder reorders as
        // deep as the SPS declares, LOW_DELAY or not): a presentation sink holds nothing more and
        // drops what would go backwards; an arrival sink takes frames as they come.
        let q = SinkQueue<Frame>(policy: policy, reorderDepth: 0)
        frameSinks.withLock { $0[sinkName] = q }
        updatePacing()
        return q
    }

    /// Attaches a packet sink (compressed packets, every stream). After a drop it resumes at a
    /// keyframe. A `batching` sink's consumer is woken only by keyframes and long queues
    /// (`SinkQueue.wakeOnlyForKeyframes`): it works a keyframe interval at a time.
    @discardableResult
    public func addPacketSink(_ sinkName: String, policy: SinkPolicy, batching: Bool = false) -> SinkQueue<RelayPacket> {
        var p = policy
        p.keyframeResync = true
        // Demuxers hand packets over in decode order: nothing to hold.
        let q = SinkQueue<RelayPacket>(policy: p, reorderDepth: 0)
        if batching { q.wakeOnlyForKeyframes() }
        packetSinks.withLock { $0[sinkName] = q }
        updatePacing()
        return q
    }

    public func removeSink(_ sinkName: String) {
        frameSinks.withLock { $0.remove(sinkName) }?.close()
        packetSinks.withLock { $0.remove(sinkName) }?.close()
        updatePacing()
    }

    /// Whether the source may release packets a keyframe interval at a time (realtime files).
    public var releasesAtKeyframes: Bool { pacing.releasesAtKeyframes }

    private func updatePacing() {
        pacingUpdate.withLock { _ in
            let decoding = frameSinks.withLock { !$0.all.isEmpty }
            let allBatching = packetSinks.withLock { $0.all.allSatisfy(\.isBatching) }
            pacing.releasesAtKeyframes = !decoding && allBatching
        }
    }

    public var sinkNames: [String] {
        (frameSinks.withLock { Array($0.byName.keys) } + packetSinks.withLock { Array($0.byName.keys) }).sorted()
    }

    public func frameSink(_ name: String) -> SinkQueue<Frame>? { frameSinks.withLock { $0[name] } }
    public func packetSink(_ name: String) -> SinkQueue<RelayPacket>? { packetSinks.withLock { $0[name] } }

    /// Switches a sink's policies at run time, without touching the source.
    public func setPolicy(_ policy: SinkPolicy, forSink sinkName: String) -> Bool {
        if let f = frameSink(sinkName) { f.setPolicy(policy); return true }
        if let p = packetSink(sinkName) { var q = policy; q.keyframeResync = true; p.setPolicy(q); return true }
        return false
    }

    // MARK: running

    public func start() {
        let options = sourceOptions
        let url = sourceURL
        let pacing = pacing
        let sup = SourceSupervisor(name: name, backoff: backoff, reconnectAtEnd: !SourceFactory.isFile(url: url) || options.loop,
                                   logger: logger,
                                   factory: { handle in try SourceFactory.open(url: url, options: options, interruptHandle: handle, pacing: pacing) },
                                   onEvent: { [weak self] e in self?.handle(e) })
        supervisor.withLock { $0 = sup }
        sup.start()
    }

    /// Stops the ingest thread (within the source's deadlines) and ends every sink's queue.
    public func stop() {
        let sup = supervisor.withLock { s -> SourceSupervisor? in let x = s; s = nil; return x }
        sup?.stop(timeout: 5)
        for q in frameSinks.withLock({ $0.all }) { q.flushReorder(); q.close() }
        for q in packetSinks.withLock({ $0.all }) { q.close() }
    }

    public var currentStatus: StreamStatus {
        var s = status.withLock { $0 }
        s.fpsIn = fps.rate()
        s.arrivalToDecoded = arrivalToDecoded.summary
        if sourceOptions.realtime && SourceFactory.isFile(url: sourceURL) {
            s.pacing = pacing.releasesAtKeyframes ? "keyframes" : "packets"
        }
        return s
    }

    // MARK: the ingest thread

    private func handle(_ event: SourceEvent) {
        switch event {
        case .opened(let streams, _, let generation):
            ingest.reset(streams: streams, generation: generation)
            // A new connection restarts the timestamps: ordering starts afresh in every sink.
            for q in frameSinks.withLock({ $0.all }) { q.restartTimeline() }
            for q in packetSinks.withLock({ $0.all }) { q.restartTimeline() }
            let video = streams.first { $0.mediaType == .video }
            status.withLock { s in
                s.codec = video?.codecName
                s.width = video?.width
                s.height = video?.height
                s.connections = generation
            }
        case .packet(let packet):
            publish(packet)
        case .closed(let error):
            if let error { status.withLock { $0.lastError = error } }
            ingest.decoder = nil
        case .stateChanged(let state):
            status.withLock { s in
                s.state = state.name
                s.since = Date()
                if state.name != "live" && s.signalLostSince == nil { s.signalLostSince = s.since }
                switch state {
                case .reconnecting(let attempt, let error):
                    s.reconnectAttempt = attempt
                    s.lastError = error
                case .live:
                    s.reconnectAttempt = nil
                    s.signalLostSince = nil
                default: break
                }
            }
        }
    }

    private func publish(_ packet: Packet) {
        // Per packet: the lock hands out the current sink list without copying it.
        if let epoch = ingest.epoch {
            let item = RelayPacket(packet: packet, epoch: epoch)
            for q in packetSinks.withLock({ $0.all }) { q.push(item) }
        }
        guard packet.mediaType == .video, let video = ingest.video, packet.streamIndex == video.index else { return }
        fps.tick()
        let sinks = frameSinks.withLock { $0.all }
        guard !sinks.isEmpty else {
            if ingest.decoder != nil {
                ingest.decoder = nil
                status.withLock { $0.decoding = false }
            }
            return
        }
        if ingest.decoder == nil {
            guard packet.isKeyframe else { return } // start cleanly at a keyframe
            do {
                var o = decoderOptions
                o.lowDelay = true // no delay beyond the reorder depth the stream declares
                let d = try VideoDecoder(stream: video, options: o, logger: logger)
                ingest.decoder = d
                status.withLock { s in
                    s.decoding = true
                    s.decoderPath = d.path.rawValue
                    s.fallbackReason = d.fallbackReason
                }
            } catch {
                status.withLock { $0.lastError = "\(error)" }
                return
            }
        }
        guard let decoder = ingest.decoder else { return }
        // Falling behind (CPU): skip to the next keyframe, counted for every frame sink.
        if ingest.isBehind(packet, timeBase: video.timeBase) {
            decoder.skipToNextKeyframe()
            for q in sinks { q.countDrop(.decoderBehind) }
            return
        }
        let before = decoder.counters.corruptPackets + decoder.counters.skippedUntilKeyframe
        let frames = decoder.decode(packet)
        let after = decoder.counters.corruptPackets + decoder.counters.skippedUntilKeyframe
        if after > before { for q in sinks { q.countDrop(.corrupt) } }
        for f in frames {
            arrivalToDecoded.record(nanoseconds: f.decodedNanos &- f.arrivalNanos)
            for q in sinks { q.push(f) }
        }
        let counters = decoder.counters
        status.withLock { $0.decodeCounters = counters }
    }
}

/// Sinks by name, with the list the per-packet path iterates kept ready (rebuilt on change,
/// which is rare, rather than on every packet).
struct SinkSet<Item: QueueItem>: Sendable {
    private(set) var byName: [String: SinkQueue<Item>] = [:]
    private(set) var all: [SinkQueue<Item>] = []

    subscript(name: String) -> SinkQueue<Item>? {
        get { byName[name] }
        set { byName[name] = newValue; all = Array(byName.values) }
    }

    mutating func remove(_ name: String) -> SinkQueue<Item>? {
        let q = byName.removeValue(forKey: name)
        all = Array(byName.values)
        return q
    }
}

/// State only the ingest thread touches.
///
/// Safety: written and read only from the stream's ingest thread (SourceSupervisor's events),
/// except `decoder = nil` from `.closed`, which is on that same thread.
final class IngestState: @unchecked Sendable {
    var decoder: VideoDecoder?
    var video: StreamInfo?
    var epoch: IngestEpoch?
    private var baseline: Double?

    func reset(streams: [StreamInfo], generation: Int) {
        video = streams.first { $0.mediaType == .video }
        epoch = IngestEpoch(generation: generation, streams: streams)
        decoder = nil
        baseline = nil
    }

    /// True when packets arrive later, relative to their timestamps, than they used to by more
    /// than half a second: the ingest (decoding) cannot keep up.
    func isBehind(_ p: Packet, timeBase: TimeBase) -> Bool {
        guard let t = p.dts ?? p.pts else { return false }
        let lag = Double(p.arrivalNanos) / 1e9 - timeBase.seconds(t)
        guard let b = baseline else { baseline = lag; return false }
        if lag < b { baseline = lag; return false }
        if lag - b > 0.5 {
            baseline = lag // re-anchor after skipping
            return true
        }
        return false
    }
}

/// Events per second over the last two seconds.
final class RateMeter: Sendable {
    private let times = Mutex<[UInt64]>([])
    func tick() {
        let now = MonotonicClock.nanoseconds()
        times.withLock { t in
            t.append(now)
            while let f = t.first, now - f > 2_000_000_000 { t.removeFirst() }
        }
    }
    func rate() -> Double {
        let now = MonotonicClock.nanoseconds()
        return times.withLock { t in
            let recent = t.filter { now - $0 <= 2_000_000_000 }
            return Double(recent.count) / 2
        }
    }
}
