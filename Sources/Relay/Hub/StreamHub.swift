public import MediaCore
import Wire
public import Demux
public import Decode
public import Logging
import Foundation
import Synchronization

/// Reads a capture time from a decoded picture (a stamped test source's barcode): installed
/// only on streams configured to measure. Returns the picture's age in milliseconds.
public typealias CaptureAgeReader = @Sendable (Frame) -> Double?

/// One stream: one supervised, reconnecting ingest that reads packets and hands them to every
/// output's bounded queue, and the registry of those outputs. The ingest thread only reads and
/// fans out: it never decodes, never waits for an output, never does an output's work. Video
/// packets also go to the decode stage (while a frame output is attached), which feeds the
/// frame outputs from a thread of its own.
public final class StreamHub: Sendable {
    public let name: String
    public let sourceURL: String
    public let title: String?
    /// The decoder of this stream, behind its own queue.
    public let decode: DecodeStage
    /// Reads capture times from pictures, where the stream is configured to measure.
    public let captureAge: CaptureAgeReader?
    /// Where the stream's state changes are told (the engine's bus; nil: nowhere).
    public let events: StreamEventBus?
    private let logger: Logger
    private let supervisor: Mutex<SourceSupervisor?> = Mutex(nil)
    private let packetQueues = Mutex(SinkSet<RelayPacket>())
    /// The decode stage's queue while it runs (video packets only).
    private let decodeQueue = Mutex<SinkQueue<RelayPacket>?>(nil)
    private let registry = Mutex<[any StreamOutput]>([])
    private let status: Mutex<StreamStatus>
    private let ingest = IngestState()
    /// RTSP `transport: auto`: TCP once UDP media stopped mid-session (kept across reconnects).
    private let transportMemory: TransportMemory
    /// The streams of the latest connection (kept while reconnecting): what a session
    /// description is made from before any packet.
    private let lastEpoch = Mutex<IngestEpoch?>(nil)
    /// The current source, where it can be asked for a keyframe (a WHIP publisher).
    private let keyframes = KeyframeLine()
    /// The current source's talk path (a camera's backchannel, a WHIP publisher's audio).
    private let talkPath = TalkLine()
    private let fps = RateMeter()
    private let bytesIn = ByteRateMeter()
    private let linkTotals = Mutex(LinkTotals())
    private let sourceOptions: SourceOptions
    private let opener: SourceOpener
    private let backoff: Backoff
    /// Whether a realtime file source may release packets at keyframes: kept in step with the
    /// outputs (nothing decodes, every packet output woken only at keyframes).
    private let pacing = PacingHint()
    /// Serialises output changes and the pacing update that follows each.
    private let outputChange = Mutex(())
    /// On-demand sources: connected only while something consumes the stream, closed after
    /// this many idle seconds; nil: always connected.
    public let onDemandIdle: Double?
    private let lastDemand = Atomic<UInt64>(0)
    /// Started (by the engine) and not stopped: on-demand ingest may run.
    private let running = Atomic<Bool>(false)
    /// Stopped for good.
    private let ended = Atomic<Bool>(false)
    /// Connections of earlier on-demand sessions: generations keep counting across them.
    private let generationBase = Atomic<Int>(0)
    private let lastGeneration = Atomic<Int>(0)

    public init(name: String, source: String, title: String? = nil, sourceOptions: SourceOptions = SourceOptions(),
                decoderOptions: DecoderOptions = DecoderOptions(), opener: SourceOpener = SourceOpener(),
                captureAge: CaptureAgeReader? = nil, events: StreamEventBus? = nil, backoff: Backoff = Backoff(), decoders: DecoderFactory = .libavcodec,
                onDemandIdle: Double? = nil, logger: Logger) {
        self.onDemandIdle = onDemandIdle
        self.events = events
        self.name = name
        self.sourceURL = source
        self.title = title
        self.sourceOptions = sourceOptions
        self.opener = opener
        self.captureAge = captureAge
        // A publish stream's reopen waits for the next publisher anyway: a publisher that
        // leaves is not a failure to back off from (a phone that drops and returns is back at
        // once, however often it did).
        self.backoff = source.hasPrefix("publish://") ? Backoff(initial: 0.02, cap: 0.05, stableAfter: 5) : backoff
        self.logger = logger
        decode = DecodeStage(streamName: name, options: decoderOptions, decoders: decoders, logger: logger)
        transportMemory = TransportMemory(logger: logger)
        var initial = StreamStatus(name: name, title: title, source: Redactor.redact(source))
        if onDemandIdle != nil { initial.state = .idle }
        status = Mutex(initial)
    }

    // MARK: outputs

    /// Registers an output so that the API and the metrics list it.
    public func register(_ output: any StreamOutput) {
        registry.withLock { r in
            r.removeAll { $0.name == output.name }
            r.append(output)
        }
    }

    /// Every output: the registered ones, and the decode stage while it runs.
    public var outputs: [any StreamOutput] {
        let registered = registry.withLock { $0 }
        return decode.packetQueue == nil ? registered : [decode] + registered
    }

    public func output(named name: String) -> (any StreamOutput)? {
        outputs.first { $0.name == name }
    }

    /// A packet output's handle: its queue of this stream's packets (registered as `name`), its
    /// policy and status, taken blocking or async. The output registers itself (`register`)
    /// once made around the handle.
    public func attachOutput(_ name: String, kind: OutputKind, policy: SinkPolicy, taking: OutputTaking,
                             keepsPolicy: Bool = false) -> OutputHandle {
        let handle = OutputHandle(hub: self, name: name, kind: kind, policy: policy, taking: taking, keepsPolicy: keepsPolicy)
        if kind.isViewer { viewerEvent(.viewerJoined, output: kind, name: name) }
        return handle
    }

    private func viewerEvent(_ kind: StreamEvent.Kind, output: OutputKind, name viewer: String) {
        events?.publish(StreamEvent(stream: name, kind: kind, details: ["output": output.rawValue, "viewer": viewer]))
    }

    /// A bounded queue of this stream's packets (every stream), for a packet output. After a
    /// drop it resumes at a keyframe. A `batching` queue wakes its consumer only for keyframes
    /// and long queues (`SinkQueue.wakeOnlyForKeyframes`): it works a keyframe interval at a time.
    func addPacketQueue(_ queueName: String, policy: SinkPolicy, batching: Bool = false,
                               notify: (@Sendable () -> Void)? = nil) -> SinkQueue<RelayPacket> {
        var p = policy
        p.keyframeResync = true
        // Demuxers hand packets over in decode order: nothing to hold.
        let q = SinkQueue<RelayPacket>(policy: p, reorderDepth: 0, notify: notify)
        if batching { q.wakeOnlyForKeyframes() }
        outputChange.withLock { _ in
            packetQueues.withLock { $0[queueName] = q }
            updatePacing()
        }
        return q
    }

    /// A bounded queue of this stream's decoded pictures, for a frame output. Decoding starts
    /// with the first one. `notify` replaces waking a `pop` (an async consumer).
    public func addFrameQueue(_ queueName: String, policy: SinkPolicy, notify: (@Sendable () -> Void)? = nil) -> SinkQueue<Frame> {
        outputChange.withLock { _ in
            let q = decode.addFrameSink(queueName, policy: policy, notify: notify)
            decodeQueue.withLock { $0 = decode.packetQueue }
            updatePacing()
            return q
        }
    }

    /// Removes an output and its queue (which closes); decoding stops with the last frame output.
    public func removeOutput(_ outputName: String) {
        outputChange.withLock { _ in
            let removed = registry.withLock { r -> (any StreamOutput)? in
                let o = r.first { $0.name == outputName }
                r.removeAll { $0.name == outputName }
                return o
            }
            if let removed, removed.kind.isViewer { viewerEvent(.viewerLeft, output: removed.kind, name: outputName) }
            packetQueues.withLock { $0.remove(outputName) }?.close()
            if decode.removeFrameSink(outputName) {
                decodeQueue.withLock { $0 = decode.packetQueue }
            }
            updatePacing()
        }
    }

    /// Switches an output's policy at run time, without touching the source. Nil when there is
    /// no such output; false when the output keeps its own.
    public func setPolicy(_ policy: SinkPolicy, forOutput outputName: String) -> Bool? {
        guard let o = output(named: outputName) else { return nil }
        return o.setPolicy(policy)
    }

    /// Whether the source may release packets a keyframe interval at a time (realtime files).
    public var releasesAtKeyframes: Bool { pacing.releasesAtKeyframes }

    private func updatePacing() {
        let decoding = decode.hasFrameSinks
        let allBatching = packetQueues.withLock { $0.all.allSatisfy(\.isBatching) }
        pacing.releasesAtKeyframes = !decoding && allBatching
    }

    // MARK: running

    public func start() {
        // A hub stopped (removed, placed elsewhere) never starts again: a start racing its
        // removal must not read the source.
        guard !ended.load(ordering: .acquiring) else { return }
        running.store(true, ordering: .releasing)
        guard let idle = onDemandIdle else { startIngest(); return }
        // On demand: connect at the first demand; a watcher closes the source when idle.
        let t = Thread { [weak self] in
            while let self, self.running.load(ordering: .acquiring) {
                Thread.sleep(forTimeInterval: min(0.5, idle / 4))
                let quiet = MonotonicClock.nanoseconds() &- self.lastDemand.load(ordering: .relaxed) > PeerNumber.nanoseconds(idle)
                if quiet && self.supervisor.withLock({ $0 != nil }) { self.suspendIngest() }
            }
        }
        t.name = "on-demand:\(name)"
        t.start()
    }

    /// Something consumes the stream (a viewer, a snapshot, a playlist request): an on-demand
    /// source connects now if it is not connected.
    public func demand() {
        guard onDemandIdle != nil else { return }
        lastDemand.store(MonotonicClock.nanoseconds(), ordering: .relaxed)
        guard running.load(ordering: .acquiring) else { return }
        if supervisor.withLock({ $0 == nil }) {
            logger.info("on-demand source: connecting")
            startIngest()
        }
    }

    /// Closes an idle on-demand source; outputs stay, waiting for the next demand.
    private func suspendIngest() {
        let sup = supervisor.withLock { s -> SourceSupervisor? in let x = s; s = nil; return x }
        guard let sup else { return }
        logger.info("on-demand source: idle, disconnecting")
        _ = generationBase.add(lastGeneration.load(ordering: .relaxed), ordering: .relaxed)
        lastGeneration.store(0, ordering: .relaxed)
        Task {
            await sup.stop(timeout: 5)
            self.status.withLock { s in
                s.state = .idle
                s.since = Date()
                s.signalLostSince = nil
            }
        }
    }

    private func startIngest() {
        let options = sourceOptions
        let url = sourceURL
        let pacing = pacing
        let opener = opener
        let transports = transportMemory
        let keyframes = keyframes
        let talkPath = talkPath
        let reachability = Reachability(url: url, listen: options.listen)
        let sup = SourceSupervisor(name: name, backoff: backoff, reconnectAtEnd: !SourceOpener.isFile(url: url) || options.loop,
                                   reachability: reachability, logger: logger,
                                   factory: { handle in
                                       let o = transports.options(options, url: url)
                                       let source = try opener.open(url: url, options: o, interruptHandle: handle, pacing: pacing)
                                       keyframes.source(source as? any KeyframeRequesting)
                                       talkPath.source(source)
                                       return transports.watch(source, options: o, reachability: reachability)
                                   },
                                   onEvent: { [weak self] e in self?.handle(e) })
        let started = supervisor.withLock { s -> Bool in
            guard s == nil else { return false }
            s = sup
            return true
        }
        if started { sup.start() }
    }

    /// Stops the ingest thread (within the source's deadlines), then the decode stage, and ends
    /// every queue: each output then finishes what it took.
    public func stop() async {
        ended.store(true, ordering: .releasing)
        running.store(false, ordering: .releasing)
        let sup = supervisor.withLock { s -> SourceSupervisor? in let x = s; s = nil; return x }
        await sup?.stop(timeout: 5)
        await decode.stop()
        for q in packetQueues.withLock({ $0.all }) { q.close() }
    }

    /// The link's health as its source or publisher's server last said it (an RTSP camera's
    /// RTP, an SRT publisher's connection).
    /// Counts run over the stream's life: a new session's counters (from zero) are added to
    /// the last session's.
    public func reportLink(_ link: LinkHealth) {
        let total = linkTotals.withLock { $0.accumulate(link) }
        status.withLock { $0.link = total }
    }

    /// The latest connection's streams; nil before the first.
    public var latestEpoch: IngestEpoch? { lastEpoch.withLock { $0 } }

    /// Asks the source for a keyframe now: a new viewer (RTSP, WHEP), a viewer's PLI or FIR, an
    /// HLS segment due. Only a source that can be asked hears it (a WHIP publisher, by PLI); a
    /// camera's GOP is its own. The source spaces what reaches its publisher (a WHIP session
    /// sends at most one PLI in 100 ms and defers the rest). Returns whether the source takes
    /// requests (a keyframe is on its way).
    @discardableResult
    public func requestKeyframe() -> Bool { keyframes.request() }

    /// Where an operator's voice goes now: the live source's talk path; nil when it has none
    /// or its session ended.
    public var talkTarget: (any TalkTarget)? { talkPath.target }

    public var currentStatus: StreamStatus {
        var s = status.withLock { $0 }
        s.fpsIn = fps.rate()
        s.bytesIn = bytesIn.total
        s.bitrateIn = bytesIn.bitsPerSecond()
        let d = decode.decodeInfo
        s.decoding = d.decoding
        s.decoderPath = d.path
        s.fallbackReason = d.fallbackReason
        s.decodeCounters = d.counters
        s.arrivalToDecoded = decode.arrivalToDecoded.summary
        if transportMemory.usesTCP { s.transportFallback = "tcp" }
        if sourceOptions.realtime && SourceOpener.isFile(url: sourceURL) {
            s.pacing = pacing.releasesAtKeyframes ? "keyframes" : "packets"
        }
        return s
    }

    // MARK: the ingest thread

    private func handle(_ event: SourceEvent) {
        switch event {
        case .opened(let streams, _, let sessionGeneration):
            // On-demand sessions keep counting connections (and epochs stay distinct).
            lastGeneration.store(sessionGeneration, ordering: .relaxed)
            let generation = generationBase.load(ordering: .relaxed) + sessionGeneration
            ingest.reset(streams: streams, generation: generation)
            lastEpoch.withLock { $0 = ingest.epoch }
            if ingest.damaged { setDamaged(false) } // a new connection starts at a keyframe
            // A new connection restarts the timestamps: ordering starts afresh in every queue
            // (the decode stage restarts its frame queues when it sees the new epoch).
            for q in packetQueues.withLock({ $0.all }) { q.restartTimeline() }
            let video = streams.first { $0.mediaType == .video }
            status.withLock { s in
                s.codec = video?.codecName
                s.width = video?.width
                s.height = video?.height
                s.connections = generation
            }
        case .packet(let packet):
            publish(packet)
        case .health(let link):
            reportLink(link)
        case .closed(let error):
            if let error { status.withLock { $0.lastError = error } }
        case .stateChanged(let sourceState):
            let state = StreamState(sourceState)
            // Signal lost: once per outage of a stream that was live; back: with its length.
            let (lost, back) = status.withLock { s -> (Bool, TimeInterval?) in
                let wasLive = s.state == .live
                var lost = false, back: TimeInterval?
                s.state = state
                s.since = Date()
                if state != .live && s.signalLostSince == nil { s.signalLostSince = s.since }
                switch sourceState {
                case .reconnecting(let attempt, let error):
                    lost = wasLive
                    s.reconnectAttempt = attempt
                    s.lastError = error
                case .live:
                    if let since = s.signalLostSince, s.connections > 1 { back = Date().timeIntervalSince(since) }
                    s.reconnectAttempt = nil
                    s.signalLostSince = nil
                default: break
                }
                return (lost, back)
            }
            if let events {
                if lost { events.publish(StreamEvent(stream: name, kind: .signalLost, detail: status.withLock { $0.lastError })) }
                if let back {
                    events.publish(StreamEvent(stream: name, kind: .signalBack, details: ["outage_seconds": String(format: "%.1f", back)]))
                }
                var e = StreamEvent(stream: name, kind: .live, at: Date())
                switch sourceState {
                case .live: e.connection = status.withLock { $0.connections }
                case .reconnecting(let attempt, let error): e.kind = .reconnecting; e.attempt = attempt; e.detail = error
                case .stopped(let reason): e.kind = .stopped; e.detail = reason
                case .connecting: return
                }
                events.publish(e)
            }
        }
    }

    /// The stream turns damaged (a loss) or clean again (a clean keyframe): shown in the API
    /// and told to event subscribers (the ops page marks the tile).
    private func setDamaged(_ damaged: Bool) {
        ingest.damaged = damaged
        status.withLock { s in
            s.damaged = damaged
            s.damagedSince = damaged ? Date() : nil
            if damaged { s.damageEvents += 1 }
        }
        events?.publish(StreamEvent(stream: name, kind: damaged ? .damaged : .repaired, at: Date()))
    }

    /// Hands a packet to every packet queue, and a video packet to the decode stage's queue.
    /// Never blocks: each queue applies its own policy.
    private func publish(_ packet: Packet) {
        guard let epoch = ingest.epoch else { return }
        let item = RelayPacket(packet: packet, epoch: epoch)
        bytesIn.add(packet.size)
        // Per packet: the lock hands out the current queue list without copying it.
        for q in packetQueues.withLock({ $0.all }) { q.push(item) }
        if packet.lostBefore > 0 { status.withLock { $0.rtpPacketsLost += packet.lostBefore } }
        guard packet.streamIndex == epoch.videoIndex else { return }
        if packet.isDamaged != ingest.damaged { setDamaged(packet.isDamaged) }
        fps.tick()
        decodeQueue.withLock { $0 }?.push(item)
    }
}
