public import Logging
public import Foundation
import MediaCore
public import Demux
import Mux
import Synchronization

/// A packet sink that runs on a thread of its own: takes packets from its queue and hands
/// them to `process` until stopped, then lets it finish.
public class PacketSinkWorker: @unchecked Sendable {
    // Safety: the subclass's state is confined to the worker thread; `running`/`done` are
    // thread-safe; `queue` is Sendable.
    public let queue: SinkQueue<RelayPacket>
    public let name: String
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(hub: StreamHub, sinkName: String, policy: SinkPolicy, batching: Bool = false) {
        name = "\(sinkName):\(hub.name)"
        queue = hub.addPacketSink(sinkName, policy: policy, batching: batching)
    }

    init(queue: SinkQueue<RelayPacket>, name: String) {
        self.queue = queue
        self.name = name
    }

    var isRunning: Bool { running.load(ordering: .relaxed) }

    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // A batching consumer is woken by keyframes and by a long queue (32 packets, about a
        // second at 30 fps): its timeout only takes what a slow trickle left. Each wake-up of a
        // sleeping thread costs ~0.1-0.3 ms of CPU here (caches refilled), so a quiet remuxing
        // stream's segmenter waking 4 times a second was 15 % of its cost.
        let timeout = queue.isBatching ? 1.0 : 0.25
        let t = Thread { [self] in
            while self.isRunning {
                if let item = self.queue.pop(timeout: timeout) { self.process(item) } else { self.idle() }
            }
            while let item = self.queue.pop(timeout: 0) { self.process(item) }
            self.finish()
            self.done.signal()
        }
        t.name = name
        t.start()
    }

    /// Finishes what is in hand (after the hub stopped, so every packet it took is in).
    public func stop(timeout: Double = 5) {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        queue.wakeConsumer()
        _ = done.wait(timeout: .now() + timeout)
    }

    func process(_ item: RelayPacket) {}
    func idle() {}
    func finish() {}
}

/// Settings of a stream's recording.
public struct RecordSettings: Sendable, Hashable {
    public var path: String
    /// A new file after this many seconds (at the next keyframe).
    public var segmentDuration: Double = 3600
    public init(path: String) { self.path = path }
}

/// Records the whole stream, without re-encoding, to fragmented MP4: a fragment at every
/// keyframe goes straight to the file, so a killed process leaves a playable file; files are
/// rotated by duration and on reconnects (parameters may change); the last fragment is written
/// on graceful shutdown.
public final class Recorder: PacketSinkWorker, @unchecked Sendable {
    public let settings: RecordSettings
    private let logger: Logger
    private let streamName: String
    // Confined to the worker thread.
    private let timeline = PacketTimeline()
    private var muxer: FragmentMuxer?
    private var file: FileHandle?
    private var fileStart: Int64 = 0
    private let files = Mutex<[String]>([])

    public init(hub: StreamHub, settings: RecordSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        streamName = hub.name
        // Fragments are written at keyframes, which always wake the thread.
        super.init(hub: hub, sinkName: "record", policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 1200)), batching: true)
    }

    /// Files written so far (paths).
    public var recordedFiles: [String] { files.withLock { $0 } }

    override func process(_ item: RelayPacket) {
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        if at.newEpoch { closeFile() }
        if at.timing, at.keyframe {
            if muxer != nil, Double(at.dts - fileStart) / 1e6 >= settings.segmentDuration { closeFile() }
            if muxer == nil { openFile(at, at.epoch) } else { flushFragment() }
        }
        guard let muxer, muxer.carries(streamIndex: at.packet.streamIndex) else { return }
        do {
            try muxer.write(at.packet, pts: at.pts, dts: at.dts, duration: at.duration)
        } catch {
            logger.warning("record: writing failed; a new file at the next keyframe", metadata: ["error": "\(error)"])
            closeFile()
            timeline.restart()
        }
    }

    private func openFile(_ at: Placement, _ epoch: IngestEpoch) {
        let f = DateFormatter()
        f.dateFormat = "yyyyMMdd-HHmmss"
        f.timeZone = TimeZone(identifier: "UTC")
        f.locale = Locale(identifier: "en_US_POSIX")
        let dir = URL(fileURLWithPath: settings.path, isDirectory: true)
        var url = dir.appendingPathComponent("\(streamName)-\(f.string(from: Date())).mp4")
        var n = 1
        while FileManager.default.fileExists(atPath: url.path) {
            n += 1
            url = dir.appendingPathComponent("\(streamName)-\(f.string(from: Date()))-\(n).mp4")
        }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let m = try FragmentMuxer(format: .fmp4, streams: epoch.streams)
            guard FileManager.default.createFile(atPath: url.path, contents: Data(m.initSegment)) else {
                throw CocoaError(.fileWriteUnknown)
            }
            file = try FileHandle(forWritingTo: url)
            try file?.seekToEnd()
            muxer = m
            fileStart = at.dts
            files.withLock { $0.append(url.path) }
            logger.info("record: new file", metadata: ["file": "\(url.path)"])
        } catch {
            logger.warning("record: cannot open a file", metadata: ["file": "\(url.path)", "error": "\(error)"])
            muxer = nil
            file = nil
        }
    }

    private func flushFragment() {
        guard let muxer, let file else { return }
        do {
            let bytes = try muxer.cut()
            if !bytes.isEmpty { try file.write(contentsOf: bytes) }
        } catch {
            logger.warning("record: writing failed", metadata: ["error": "\(error)"])
        }
    }

    private func closeFile() {
        flushFragment()
        try? file?.synchronize()
        try? file?.close()
        file = nil
        muxer = nil
    }

    override func finish() { closeFile() }
}

/// Pushes the stream, without re-encoding, to another server (RTMP, SRT, RTSP). Reconnects
/// with backoff when the destination drops, resumes at a keyframe, counts what it dropped
/// while away, and never slows another sink (its own queue, its own thread).
public final class Forwarder: PacketSinkWorker, @unchecked Sendable {
    public let destination: String
    private let logger: Logger
    private let backoff: Backoff
    // Confined to the worker thread.
    private var publisher: Publisher?
    private var timeline = PacketTimeline()
    private var attempt = 0
    private var nextAttempt = Date.distantPast
    private let status = Mutex<ForwardStatus>(ForwardStatus())

    public init(hub: StreamHub, index: Int, destination: String, backoff: Backoff = Backoff(), logger: Logger) {
        self.destination = destination
        self.backoff = backoff
        var l = logger
        l[metadataKey: "forward.destination"] = "\(Redactor.redact(destination, hideStreamKey: true))"
        self.logger = l
        super.init(hub: hub, sinkName: "forward\(index)", policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 300)))
        status.withLock { $0.destination = Redactor.redact(destination, hideStreamKey: true) }
    }

    public var currentStatus: ForwardStatus { status.withLock { $0 } }

    override func process(_ item: RelayPacket) {
        if publisher == nil {
            guard Date() >= nextAttempt, item.isKeyframe else {
                queue.dropTaken(.resync) // away: this packet cannot be sent
                return
            }
            connect(item.epoch)
            guard publisher != nil else { queue.dropTaken(.resync); return }
        }
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        if at.newEpoch && at.gapBefore {
            // The source reconnected: its parameters may differ, start a new connection.
            disconnect(reason: nil)
            connect(at.epoch)
        }
        guard let publisher else { return }
        do {
            try publisher.write(at.packet, pts: at.pts, dts: at.dts, duration: at.duration)
            status.withLock { $0.sent += 1 }
        } catch {
            queue.dropTaken(.resync)
            disconnect(reason: error.description)
        }
    }

    private func connect(_ epoch: IngestEpoch) {
        do {
            publisher = try Publisher(url: destination, streams: epoch.streams)
            timeline = PacketTimeline()
            attempt = 0
            // What waited while away is stale: dropped (counted), resume at a keyframe.
            queue.discardAll(.resync)
            status.withLock { $0.state = "live"; $0.connections += 1 }
            logger.info("forward: connected")
        } catch {
            disconnect(reason: error.description)
        }
    }

    private func disconnect(reason: String?) {
        publisher?.finish()
        publisher = nil
        guard let reason else { return }
        attempt += 1
        let delay = backoff.delay(attempt: attempt, unit: Double.random(in: 0...1))
        nextAttempt = Date().addingTimeInterval(delay)
        status.withLock { $0.state = "reconnecting"; $0.lastError = Redactor.scrub(reason); $0.reconnects += 1 }
        logger.warning("forward: destination down; retrying", metadata: ["error": "\(Redactor.scrub(reason))", "retry_s": "\(delay)"])
    }

    override func finish() {
        publisher?.finish()
        publisher = nil
        status.withLock { $0.state = "stopped" }
    }
}

public struct ForwardStatus: Sendable, Codable {
    public var destination = ""
    public var state = "connecting"
    public var connections = 0
    public var reconnects = 0
    public var sent = 0
    public var lastError: String?
}
