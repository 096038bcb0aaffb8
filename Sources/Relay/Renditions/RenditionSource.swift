public import MediaCore
public import Mux
import Demux
import Wire
import Foundation
import Synchronization

/// What a rendition is doing now, for the API and `probe`.
public struct RenditionInfo: Sendable, Codable, Equatable {
    /// The stream it is made from, and its rung's name.
    public var of: String
    public var name: String
    public var width: Int?
    public var height: Int
    public var bitrateKbps: Int
    /// The encoder taken the last time it encoded, and why not a better one.
    public var encoder: EncoderChoice?
    /// Encoding now (someone watches); false: it costs nothing.
    public var encoding: Bool
    public var framesEncoded: Int
    /// RFC 6381 codecs of what it encodes (`avc1.64001e`), once it has encoded.
    public var codecs: String?
    /// The encoder's own time per picture (scale and encode), mean over the last 30 pictures,
    /// in ms: what a rendition adds to a picture's latency beyond the source's path.
    public var encodeMilliseconds: Double?

    // camelCase here, snake_case on the wire (the API's encoder and decoder convert): a key
    // spelled snake_case here would not be found by a decoder that converts.
    enum CodingKeys: String, CodingKey {
        case of, name, width, height, encoder, encoding, codecs, bitrateKbps, framesEncoded
        case encodeMilliseconds = "encodeMs"
    }
}

extension RenditionInfo {
    /// RFC 6381 from a video stream's extradata (an avcC or hvcC record, or Annex B parameter
    /// sets): H.264's `avc1.ppccll` (profile, constraints, level), H.265's `hvc1.1.6.L93.B0`;
    /// nil for another codec or when it has no SPS.
    public static func codecs(video codecName: String, extradata: [UInt8]) -> String? {
        guard let syntax = ParameterSets.Syntax(codecName: codecName) else { return nil }
        let s = ParameterSets(extradata: extradata, syntax: syntax).codecString
        return syntax == .h264 ? s?.lowercased() : s
    }
}

extension RenditionInfo {
    /// RFC 6381 for a sound stream in HLS (renditions carry the parent's sound as it is):
    /// AAC `mp4a.40.2` (AAC-LC, what cameras send), MP3 `mp4a.40.34`, `opus`; nil for anything else.
    public static func codecs(audio s: StreamInfo) -> String? {
        switch s.codecName {
        case "aac": "mp4a.40.2"
        case "mp3": "mp4a.40.34"
        case "opus": "opus"
        default: nil
        }
    }
}

/// Every rendition's state, by its stream's name.
public final class RenditionBoard: Sendable {
    private let entries = Mutex<[String: RenditionInfo]>([:])
    public init() {}
    public subscript(stream: String) -> RenditionInfo? { entries.withLock { $0[stream] } }
    func update(_ stream: String, _ change: (inout RenditionInfo) -> Void) {
        entries.withLock { e in if var i = e[stream] { change(&i); e[stream] = i } }
    }
    func set(_ stream: String, _ info: RenditionInfo) { entries.withLock { $0[stream] = info } }
    func remove(_ stream: String) { _ = entries.withLock { $0.removeValue(forKey: stream) } }
}

/// A rendition as a source: the parent stream's decoded pictures (decoded once for every
/// rendition and the preview), scaled and encoded again. It starts at the parent's next
/// keyframe, and every parent keyframe is a keyframe here, at the same presentation time; the
/// parent's timestamps pass through. Opened on the rendition stream's ingest thread while
/// someone watches it (on demand); closing it stops the encoding and, with the last frame
/// consumer, the parent's decoding.
final class RenditionSource: PacketSource {
    let streams: [StreamInfo]
    let formatName = "rendition"
    let interruptHandle: InterruptHandle
    private let url: String
    private let parent: StreamHub
    private let feed: RenditionFeed
    /// The parent's sound, passed through (never re-encoded); nil when it has none.
    private let sound: RenditionSound?
    private var heldSound: [Packet] = []
    /// Seconds of the last picture handed on: sound up to it goes out, so the two interleave.
    private var videoReached = -Double.infinity
    private let encoder: VideoEncoder
    private let board: RenditionBoard
    private let stream: String
    private var pending: [Packet] = []
    private var lastPTS: Int64?
    /// With `fps` below the parent's: the earliest presentation time (s) of the next picture.
    private var nextDue = -Double.infinity
    private let interval: Double?
    private var lastFrameAt = MonotonicClock.nanoseconds()
    private var frames = 0
    private var encodeNanos: UInt64 = 0
    /// A parent that sends no picture for this long fails the read (the supervisor reconnects).
    static let silence = 5.0

    init(url: String, stream: String, parent: StreamHub, settings: RenditionSettings, board: RenditionBoard,
         interrupt: InterruptHandle, openTimeout: Double = 10) throws(IngestError) {
        self.url = url
        self.stream = stream
        self.parent = parent
        self.board = board
        interruptHandle = interrupt
        feed = RenditionFeed(hub: parent, name: "rendition \(settings.name)")
        var info = RenditionInfo(of: parent.name, name: settings.name, width: settings.width, height: settings.height,
                                 bitrateKbps: settings.bitrateKbps, encoder: board[stream]?.encoder, encoding: false, framesEncoded: 0)
        board.set(stream, info)
        // The parent's next clean keyframe: every rendition starts where the source can.
        let end = MonotonicClock.nanoseconds() &+ PeerNumber.nanoseconds(openTimeout)
        var first: Frame?
        while first == nil {
            parent.demand()
            if interrupt.isInterrupted { feed.close(); throw IngestError(.stopped, source: url, stage: "opening", detail: "stopped") }
            if MonotonicClock.nanoseconds() > end {
                feed.close()
                throw IngestError(.timedOut, source: url, stage: "opening", detail: "no keyframe from \(parent.name) within \(Int(openTimeout)) s")
            }
            if let f = feed.queue.pop(timeout: 0.2), f.isKeyframe, !f.isDamaged { first = f }
        }
        let frame = first!
        // Sound from the parent's next packet on, for as long as this connection of it lasts
        // (known once a picture came: the parent may have connected only for this rendition).
        if let epoch = parent.latestEpoch, let audio = epoch.streams.first(where: { $0.mediaType == .audio }) {
            sound = RenditionSound(hub: parent, name: "rendition \(settings.name) sound", epoch: epoch.generation, index: audio.index, info: audio)
        } else {
            sound = nil
        }
        let height = settings.height(source: frame.height)
        let width = settings.width ?? max(2, Int(saturating: (Double(frame.width) * Double(height) / Double(max(1, frame.height)) / 2).rounded()) * 2)
        let parentRate = parent.latestEpoch?.streams.first { $0.mediaType == .video }?.frameRate ?? 30
        let fps = min(settings.fps ?? parentRate, parentRate > 0 ? parentRate : 30)
        interval = settings.fps.map { f in f < parentRate - 0.5 ? 1 / f : nil } ?? nil
        let kbps = settings.bitrate(width: width, height: height, fps: fps)
        var es = VideoEncoderSettings(width: width, height: height, bitrateKbps: kbps, fps: fps)
        es.preference = settings.encoder
        do {
            encoder = try VideoEncoder(settings: es, timeBase: frame.timeBase)
        } catch {
            feed.close()
            sound?.close()
            throw IngestError(.failed, source: url, stage: "opening", detail: "no H.264 encoder: \(error)")
        }
        var streams = [StreamInfo(index: 0, timeBase: encoder.timeBase, frameRate: fps, parameters: encoder.parameters)]
        if let sound { streams.append(StreamInfo(index: 1, timeBase: sound.info.timeBase, frameRate: nil, parameters: sound.info.parameters)) }
        self.streams = streams
        info.width = width
        info.height = height
        info.bitrateKbps = kbps
        info.encoder = encoder.choice
        info.encoding = true
        info.codecs = RenditionInfo.codecs(video: "h264", extradata: encoder.parameters.extradata)
        board.set(stream, info)
        try encode(frame)
    }

    deinit {
        feed.close()
        sound?.close()
        board.update(stream) { $0.encoding = false }
    }

    private func encode(_ frame: Frame) throws(IngestError) {
        guard let pts = frame.pts else { return }
        // The parent reconnected: its clock starts again, and so does this rendition.
        if let last = lastPTS, pts <= last {
            throw IngestError(.failed, source: url, stage: "reading", detail: "\(parent.name) started its clock again")
        }
        if let interval, !frame.isKeyframe {
            let t = Double(pts) * frame.timeBase.seconds
            guard t >= nextDue else { return }
            nextDue = max(nextDue + interval, t - interval / 2)
        }
        lastPTS = pts
        let started = MonotonicClock.nanoseconds()
        do {
            pending += try encoder.encode(frame, keyframe: frame.isKeyframe)
        } catch {
            throw IngestError(.failed, source: url, stage: "encoding", detail: "\(error)")
        }
        encodeNanos &+= MonotonicClock.nanoseconds() &- started
        frames += 1
        if frames % 30 == 0 {
            let n = frames, ms = Double(encodeNanos) / 30 / 1e6
            encodeNanos = 0
            board.update(stream) { $0.framesEncoded = n; $0.encodeMilliseconds = (ms * 100).rounded() / 100 }
        }
    }

    func readPacket() throws -> Packet? {
        if let sound {
            heldSound += sound.take()
            if let first = heldSound.first, let t = first.pts ?? first.dts, Double(t) * first.timeBase.seconds <= videoReached {
                return heldSound.removeFirst()
            }
        }
        while pending.isEmpty {
            if interruptHandle.isInterrupted { throw IngestError(.stopped, source: url, stage: "reading", detail: "stopped") }
            parent.demand()
            guard let f = feed.queue.pop(timeout: 0.25) else {
                if feed.queue.isClosed { return nil }
                if Double(MonotonicClock.nanoseconds() &- lastFrameAt) / 1e9 > Self.silence {
                    throw IngestError(.timedOut, source: url, stage: "reading", detail: "no picture from \(parent.name) for \(Int(Self.silence)) s")
                }
                continue
            }
            lastFrameAt = MonotonicClock.nanoseconds()
            try encode(f)
        }
        let picture = pending.removeFirst()
        if let t = picture.pts ?? picture.dts { videoReached = Double(t) * picture.timeBase.seconds }
        return picture
    }
}

/// A rendition's sound: the parent's audio packets of one connection, as stream 1 of the
/// rendition, through a queue of the parent's (listed with its drops) that the rendition's
/// ingest thread drains as it reads.
final class RenditionSound: PacketOutput, @unchecked Sendable {
    // Safety: `take` is called from the rendition's ingest thread only; the rest is immutable.
    let handle: OutputHandle
    let info: StreamInfo
    private let epoch: Int
    private let index: Int

    init(hub: StreamHub, name: String, epoch: Int, index: Int, info: StreamInfo) {
        self.epoch = epoch
        self.index = index
        self.info = info
        // A few seconds of sound: the pictures it waits for are a decode and an encode behind.
        handle = hub.attachOutput(name, kind: .frames, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 512)),
                                  taking: .blocking(batching: false), keepsPolicy: true)
        hub.register(self)
    }

    /// The sound queued so far, as the rendition's stream 1.
    func take() -> [Packet] {
        var out: [Packet] = []
        while let item = handle.pop(timeout: 0) {
            guard item.epoch.generation == epoch, item.packet.streamIndex == index, let p = try? item.packet.copy(streamIndex: 1) else { continue }
            out.append(p)
        }
        return out
    }

    func start() {}
    func stop() async { handle.queue.close() }
    func close() { handle.detach() }
}

/// A rendition's place among its parent's outputs: its queue of decoded pictures (decoding
/// runs while one exists), listed by the API with its drops.
final class RenditionFeed: StreamOutput {
    let name: String
    let kind = OutputKind.frames
    let queue: SinkQueue<Frame>
    private let hub: StreamHub

    init(hub: StreamHub, name: String) {
        self.hub = hub
        self.name = name
        // Every picture, in order: an encoder is not a preview. A slow encoder drops, counted.
        queue = hub.addFrameQueue(name, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 16)))
        hub.register(self)
    }

    var status: OutputStatus { OutputStatus(name: name, kind: kind, state: queue.isClosed ? .stopped : .running, queue: queue) }
    func setPolicy(_ policy: SinkPolicy) -> Bool { false }
    func start() {}
    func stop() async { queue.close() }
    func close() { hub.removeOutput(name) }
}
