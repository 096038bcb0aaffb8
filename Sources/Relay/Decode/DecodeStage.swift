public import MediaCore
public import Decode
public import Logging
import Foundation
import Synchronization

/// How a decode stage opens its decoder: libavcodec's (`VideoDecoder`, with hardware
/// negotiation) unless told otherwise.
public struct DecoderFactory: Sendable {
    public let open: @Sendable (StreamInfo, DecoderOptions, Logger) throws -> any PictureDecoder

    public init(open: @escaping @Sendable (StreamInfo, DecoderOptions, Logger) throws -> any PictureDecoder) { self.open = open }

    public static let libavcodec = DecoderFactory { stream, options, logger in try VideoDecoder(stream: stream, options: options, logger: logger) }
}

/// What the decode stage tells the stream's status.
public struct DecodeInfo: Sendable {
    public var decoding = false
    public var path: String?
    public var fallbackReason: String?
    public var counters: DecodeCounters?
    public var lastError: String?
}

/// A stream's decoder on a thread of its own, behind a bounded packet queue (as fftools runs
/// each decoder in its own thread): the ingest thread only hands video packets over, so a
/// decoder that cannot keep up never delays a read, and never costs HLS, recording or a
/// forward a packet. When packets wait longer than `maxLag` the queue drops them and decoding
/// resumes at the next keyframe (counted as `too_old` on this output). It runs while any frame
/// output (preview, in-process subscriber) is attached, and feeds each its own queue.
public final class DecodeStage: StreamOutput, Sendable {
    public static let outputName = "decode"
    public let name = DecodeStage.outputName
    public let kind = OutputKind.decode
    private let streamName: String
    private let options: DecoderOptions
    private let logger: Logger
    private let frameSinks = Mutex(SinkSet<Frame>())
    private let active = Mutex<Activation?>(nil)
    /// The queue of the current or last run: its counters once a run ended, and the policy
    /// the next run starts with.
    private let lastQueue: Mutex<SinkQueue<RelayPacket>>
    private let info = Mutex(DecodeInfo())
    /// Arrival of a packet → its picture decoded.
    public let arrivalToDecoded = LatencyHistogram()
    private let decoders: DecoderFactory

    struct Activation {
        let queue: SinkQueue<RelayPacket>
        let worker: WorkerThread
    }

    /// Behind by more than this (a packet's wait in the queue), decoding skips to a keyframe.
    public static let defaultPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 500), keyframeResync: true)

    init(streamName: String, options: DecoderOptions, decoders: DecoderFactory = .libavcodec, logger: Logger) {
        self.streamName = streamName
        self.options = options
        self.decoders = decoders
        self.logger = logger
        lastQueue = Mutex(SinkQueue<RelayPacket>(policy: Self.defaultPolicy, reorderDepth: 0))
    }

    public var decodeInfo: DecodeInfo { info.withLock { $0 } }

    /// The packet queue while running: the hub pushes the video stream's packets into it.
    var packetQueue: SinkQueue<RelayPacket>? { active.withLock { $0?.queue } }

    var frameSinkNames: [String] { frameSinks.withLock { Array($0.byName.keys) } }
    var hasFrameSinks: Bool { frameSinks.withLock { !$0.all.isEmpty } }

    /// Adds a frame output's queue; starts decoding with the first one.
    func addFrameSink(_ name: String, policy: SinkPolicy, notify: (@Sendable () -> Void)? = nil) -> SinkQueue<Frame> {
        // The decoder already puts frames in presentation order (FFmpeg's H.264 decoder reorders
        // as deep as the SPS declares, LOW_DELAY or not): a presentation sink holds nothing more
        // and drops what would go backwards; an arrival sink takes frames as they come.
        let q = SinkQueue<Frame>(policy: policy, reorderDepth: 0, notify: notify)
        frameSinks.withLock { $0[name] = q }
        activate()
        return q
    }

    /// Removes a frame output's queue (closing it); decoding stops with the last one.
    func removeFrameSink(_ name: String) -> Bool {
        guard let q = frameSinks.withLock({ $0.remove(name) }) else { return false }
        q.close()
        if !hasFrameSinks { deactivate() }
        return true
    }

    private func activate() {
        let started: Activation? = active.withLock { a in
            if a != nil { return nil }
            let queue = SinkQueue<RelayPacket>(policy: lastQueue.withLock { $0.policy }, reorderDepth: 0)
            let worker = WorkerThread(name: "decode:\(streamName)", wake: { queue.wakeConsumer() })
            a = Activation(queue: queue, worker: worker)
            lastQueue.withLock { $0 = queue }
            return a
        }
        guard let started else { return }
        started.worker.start { [self] in self.run(started) }
    }

    private func deactivate() {
        let a = active.withLock { a -> Activation? in let x = a; a = nil; return x }
        // The thread ends by itself (and frees the decoder); nobody waits for it here.
        a?.worker.requestStop()
        a?.queue.close()
    }

    // MARK: StreamOutput

    public var status: OutputStatus {
        OutputStatus(name: name, kind: kind, state: active.withLock { $0 } == nil ? .idle : .running,
                     queue: lastQueue.withLock { $0 }, lastError: info.withLock { $0.lastError })
    }

    /// Decoding always resumes at a keyframe after a drop, whatever the policy says.
    public func setPolicy(_ policy: SinkPolicy) -> Bool {
        var p = policy
        p.keyframeResync = true
        lastQueue.withLock { $0 }.setPolicy(p)
        return true
    }

    /// The stage starts with its first frame output.
    public func start() {}

    /// Stops decoding and ends every frame output's queue (what was reordered is released first).
    public func stop() async {
        let a = active.withLock { a -> Activation? in let x = a; a = nil; return x }
        if let a {
            a.queue.close()
            await a.worker.stop(timeout: 3)
        }
        for q in frameSinks.withLock({ $0.all }) { q.flushReorder(); q.close() }
    }

    // MARK: the decode thread

    private func run(_ a: Activation) {
        var decoder: (any PictureDecoder)?
        var epoch: IngestEpoch?
        while !a.worker.isStopRequested {
            guard let item = a.queue.pop(timeout: 0.25) else { continue }
            let sinks = frameSinks.withLock { $0.all }
            if item.epoch !== epoch {
                // A new connection: its timestamps start again, its parameters may differ.
                epoch = item.epoch
                decoder = nil
                for q in sinks { q.restartTimeline() }
            }
            if decoder == nil {
                guard item.isKeyframe, let video = item.epoch.videoIndex.flatMap(item.epoch.stream) else { continue } // start cleanly at a keyframe
                decoder = open(video)
            }
            guard let decoder else { continue }
            let before = decoder.counters.corruptPackets + decoder.counters.skippedUntilKeyframe
            let frames = decoder.decode(item.packet)
            let after = decoder.counters.corruptPackets + decoder.counters.skippedUntilKeyframe
            if after > before { for q in sinks { q.countDrop(.corrupt) } }
            for f in frames {
                arrivalToDecoded.record(nanoseconds: f.decodedNanos &- f.arrivalNanos)
                for q in sinks { q.push(f) }
            }
            let counters = decoder.counters
            info.withLock { $0.counters = counters }
        }
        info.withLock { $0.decoding = false }
    }

    private func open(_ video: StreamInfo) -> (any PictureDecoder)? {
        do {
            var o = options
            o.lowDelay = true // no delay beyond the reorder depth the stream declares
            let d = try decoders.open(video, o, logger)
            info.withLock { i in
                i.decoding = true
                i.path = d.path.rawValue
                i.fallbackReason = d.fallbackReason
            }
            return d
        } catch {
            info.withLock { $0.lastError = "\(error)" }
            logger.warning("decode: cannot open a decoder", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
