public import Logging
public import Foundation
import MediaCore
import Mux
import Wire
import Synchronization

/// Settings of a stream's recording.
public struct RecordSettings: Sendable, Hashable {
    public var path: String
    /// A new file after this many seconds (at the next keyframe).
    public var segmentDuration: Double = 60
    /// `keep`: files older than this many seconds go (oldest first); nil: kept by age forever.
    public var keep: Double?
    /// `max_bytes`: the stream's recordings stay under this many bytes (oldest go first).
    public var maxBytes: Int?
    public init(path: String) { self.path = path }
}

/// Records the whole stream, without re-encoding, to fragmented MP4: a fragment at every
/// keyframe goes straight to the file, so a killed process leaves a playable file; files are
/// rotated by duration and on reconnects (parameters may change); the last fragment is written
/// on graceful shutdown.
public final class Recorder: PacketOutput, Sendable {
    public let settings: RecordSettings
    public let handle: OutputHandle
    private let files: FileList
    private let worker: PacketWorker
    /// Files listed in the API (the newest); older ones are on disk, not in memory.
    static let filesListed = 1000

    /// - Parameter segments: where each finished file goes to be catalogued (nil: nowhere).
    public init(hub: StreamHub, settings: RecordSettings, segments: SegmentWriter? = nil, logger: Logger) {
        self.settings = settings
        // Fragments are written at keyframes, which always wake the thread. A recording keeps
        // everything it is given: its policy is not switched at run time (a latest-1 policy
        // would leave a file of keyframes).
        handle = hub.attachOutput("record", kind: .record, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 1200)),
                                  taking: .blocking(batching: true), keepsPolicy: true)
        files = FileList()
        worker = PacketWorker(handle: handle, work: Recording(settings: settings, streamName: hub.name, handle: handle, files: files,
                                                                 segments: segments, logger: logger))
        hub.register(self)
    }

    public func start() { worker.start() }
    /// Writes the last fragment and closes the file.
    public func stop() async { await worker.stop() }

    /// Files written so far (paths).
    public var recordedFiles: [String] { files.paths.withLock { $0 } }
}

/// The paths written, newest last (at most `Recorder.filesListed`).
private final class FileList: Sendable {
    let paths = Mutex<[String]>([])
}

/// The recording's state, confined to its thread.
private final class Recording: PacketWork {
    let settings: RecordSettings
    private let logger: Logger
    private let streamName: String
    private let handle: OutputHandle
    private let files: FileList
    private var queue: SinkQueue<RelayPacket> { handle.queue }
    private let timeline = PacketTimeline()
    private var muxer: FragmentMuxer?
    private var file: FileHandle?
    private var fileStart: Int64 = 0
    private var fragmentStart: Int64 = 0
    /// Microseconds of media held before it is written, keyframe or not: a kill -9 loses at
    /// most this much.
    static let longestFragment: Int64 = 1_000_000
    private var path: String?
    private var faulted = false
    private let segments: SegmentWriter?
    /// The open file's first picture on the wall clock, its codecs, and where its media ends.
    private var fileWallStart = Date()
    private var fileCodecs = ""
    private var fileEnd: Int64 = 0
    /// The open file's layout as written, for the catalog (playback and export read no file).
    private var fileBytes = 0
    private var initLength = 0
    private var initHash = ""
    private var fragments: [RecordedFragment] = []
    /// The stream whose times place a fragment (the video, else the first track), and the
    /// fragment in hand's times (microseconds): its main track's first and last, every track's.
    private var mainStream: Int?
    private var fragmentMain: (start: Int64, end: Int64, keyframe: Bool)?
    private var fragmentSpan: (earliest: Int64, latest: Int64)?

    init(settings: RecordSettings, streamName: String, handle: OutputHandle, files: FileList, segments: SegmentWriter?, logger: Logger) {
        self.settings = settings
        self.streamName = streamName
        self.handle = handle
        self.files = files
        self.segments = segments
        self.logger = logger
    }

    func process(_ item: RelayPacket) {
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        if at.newEpoch { closeFile() }
        if at.timing, at.keyframe {
            if muxer != nil, Double(at.dts - fileStart) / 1e6 >= settings.segmentDuration { closeFile() }
            if muxer == nil { openFile(at, at.epoch) } else { flushFragment() }
            fragmentStart = at.dts
        } else if at.timing, muxer != nil, at.dts - fragmentStart >= Self.longestFragment {
            // No keyframe for a while (intra refresh, a lost IDR): a fragment goes to disk anyway,
            // so memory stays bounded and a crash loses at most this much.
            flushFragment()
            fragmentStart = at.dts
        }
        guard let muxer, muxer.carries(streamIndex: at.packet.streamIndex) else { return }
        if at.timing {
            let end = at.dts + at.duration
            fileEnd = max(fileEnd, end)
            if at.packet.streamIndex == mainStream {
                fragmentMain = fragmentMain.map { ($0.start, max($0.end, end), $0.keyframe) } ?? (at.dts, end, at.keyframe)
            }
            fragmentSpan = fragmentSpan.map { (min($0.earliest, at.dts), max($0.latest, end)) } ?? (at.dts, end)
        }
        do {
            try muxer.write(at.packet, pts: at.pts, dts: at.dts, duration: at.duration)
        } catch {
            report("writing failed; a new file at the next keyframe", error)
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
            // The directory may have been removed under us: made again.
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let m = try FragmentMuxer(format: .fmp4, streams: epoch.streams, keepsTimes: true)
            try Data(m.initSegment).write(to: url)
            initLength = m.initSegment.count
            initHash = SHA256Stream.hex(m.initSegment)
            fileBytes = initLength
            fragments = []
            fragmentMain = nil
            fragmentSpan = nil
            let carried = epoch.streams.filter { m.carries(streamIndex: $0.index) }
            mainStream = (carried.first(where: { $0.mediaType == .video }) ?? carried.first)?.index
            file = try FileHandle(forWritingTo: url)
            try file?.seekToEnd()
            muxer = m
            fileStart = at.dts
            fileEnd = at.dts
            fileCodecs = epoch.streams.map(\.codecName).joined(separator: ",")
            // The sender's clock where it gives one (RTCP sender reports), else arrival.
            if let micros = at.packet.senderWallMicros {
                fileWallStart = Date(timeIntervalSince1970: Double(micros) / 1e6)
            } else {
                let age = Double(MonotonicClock.nanoseconds() &- at.packet.arrivalNanos) / 1e9
                fileWallStart = Date().addingTimeInterval(-max(0, min(age, 60)))
            }
            path = url.path
            files.paths.withLock { f in
                f.append(url.path)
                if f.count > Recorder.filesListed { f.removeFirst(f.count - Recorder.filesListed) }
            }
            if faulted { logger.info("record: recording again", metadata: ["file": "\(url.path)"]) }
            faulted = false
            handle.setState(.running)
            logger.info("record: new file", metadata: ["file": "\(url.path)"])
        } catch {
            report("cannot open \(url.path)", error)
            muxer = nil
            file = nil
        }
    }

    /// Writes the fragment in hand. On a write error (a full disk) or a file that is gone (its
    /// directory removed), the file is closed and a new one begins at the next keyframe.
    private func flushFragment() {
        guard let muxer, let file else { return }
        do {
            let bytes = try muxer.cut()
            if !bytes.isEmpty {
                try file.write(contentsOf: bytes)
                note(fragment: bytes)
            }
        } catch {
            report("writing failed; a new file at the next keyframe", error)
            drop()
            return
        }
        if let path, !FileManager.default.fileExists(atPath: path) {
            report("the file was removed; a new one at the next keyframe", CocoaError(.fileNoSuchFile))
            drop()
        }
    }

    /// Keeps where the fragment just written is and when it plays.
    private func note(fragment bytes: [UInt8]) {
        defer { fragmentMain = nil; fragmentSpan = nil }
        let offset = fileBytes
        fileBytes += bytes.count
        guard let moof = MP4.head(bytes, at: 0, end: bytes.count), moof.type == "moof", let main = fragmentMain, let span = fragmentSpan else { return }
        fragments.append(RecordedFragment(offset: offset, length: bytes.count, moofLength: moof.size, start: Double(main.start) / 1e6,
                                          duration: Double(main.end - main.start) / 1e6, earliest: Double(span.earliest) / 1e6,
                                          latest: Double(span.latest) / 1e6, keyframe: main.keyframe))
    }

    /// Lets go of a file that cannot be written any more, without flushing into it again.
    private func drop() {
        try? file?.close()
        file = nil
        muxer = nil
        path = nil
        timeline.restart()
    }

    private func report(_ what: String, _ error: any Error) {
        logger.warning("record: \(what)", metadata: ["error": "\(error)"])
        handle.report(problem: "\(what): \(error)")
        handle.countError()
        faulted = true
        handle.setState(.faulted)
    }

    private func closeFile() {
        flushFragment()
        if let file {
            // The file's last bytes reach the disk here: a failure is the recording's loss, so it is said.
            var whole = true
            do { try file.synchronize() } catch { report("cannot sync the file", error); whole = false }
            do { try file.close() } catch { report("cannot close the file", error); whole = false }
            if whole, let path { catalogue(path) }
        }
        file = nil
        muxer = nil
        path = nil
    }

    /// Hands a finished file to the catalog: its span on the wall clock and its SHA-256.
    private func catalogue(_ path: String) {
        guard let segments else { return }
        guard let sha = RecordedSegment.hash(file: path),
              let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue else {
            logger.warning("record: a finished file cannot be read back; not catalogued", metadata: ["file": "\(path)"])
            return
        }
        var segment = RecordedSegment(stream: streamName, path: path, start: fileWallStart, duration: Double(max(0, fileEnd - fileStart)) / 1e6,
                                      bytes: size, codecs: fileCodecs, sha256: sha)
        // The layout as written, when it accounts for every byte of the file (else the file is
        // read by its boxes when played).
        if let last = fragments.last, last.offset + last.length == size, fragments.first?.offset == initLength,
           zip(fragments, fragments.dropFirst()).allSatisfy({ $0.offset + $0.length == $1.offset }) {
            segment.index = SegmentIndex(initLength: initLength, initHash: initHash, fragments: fragments)
        }
        segments.add(segment)
    }

    func finish() { closeFile() }
}

