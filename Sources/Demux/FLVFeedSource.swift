internal import CFFmpeg
import Wire
public import MediaCore
public import Logging
import Foundation

/// A publisher's FLV tags (`FLVFeed`) as packets.
///
/// Opening: libavformat's FLV demuxer reads the first tags from memory (a custom AVIO, no pipe)
/// and probes the streams, so the codec parameters are FFmpeg's own (size, profile, frame rate).
/// Then, when the publisher sends H.264 and AAC (nearly every RTMP publisher), the demuxer is
/// drained of what it read ahead and closed, and each later tag becomes a packet here: a copy
/// of the tag's payload with its timestamps, the way FFmpeg's FLV demuxer makes it, without the
/// demuxer's per-tag work and buffers. Other codecs stay on the demuxer, still fed from memory.
///
/// Run by a supervisor (`deliverAll`), the direct path builds and hands on each packet on the
/// publisher's thread as the tag is pushed: the ingest thread only waits for the end.
public final class FLVFeedSource: PushingPacketSource {
    public private(set) var streams: [StreamInfo] = []
    public let formatName = "flv"
    public let interruptHandle: InterruptHandle
    /// Whether packets are built from the tags here (H.264 and AAC), not by the demuxer.
    public private(set) var isDirect = false

    private let feed: FLVFeed
    private let url: String
    private let options: SourceOptions
    private let input: FeedInput
    private var demuxer: IngestSession?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var held: [Packet] = []
    private var heldNext = 0
    private let scratch: UnsafeMutablePointer<AVPacket>
    private var video: Track?
    private var audio: Track?
    /// 2^32 ms for each time the publisher's 32-bit timestamps wrapped.
    private var epoch: Int64 = 0
    private var lastTimestamp: UInt32?

    /// What a direct stream needs: its index, its setup, a packet's duration.
    private struct Track {
        let index: Int
        var extradata: [UInt8]
        var changed: [UInt8]?
        let duration: Int64
    }

    /// The streams the direct path can make packets of: FLV codec 7 (H.264), sound format 10 (AAC).
    static let directVideoCodec: UInt8 = 7
    static let directSoundFormat: UInt8 = 10

    public init(feed: FLVFeed, url: String, options: SourceOptions, interruptHandle: InterruptHandle, logger: Logger = Logger(label: "liverelay.demux")) throws(IngestError) {
        self.feed = feed
        self.url = url
        self.options = options
        self.interruptHandle = interruptHandle
        guard let pkt = av_packet_alloc() else {
            feed.abandon()
            throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory")
        }
        scratch = pkt
        input = FeedInput(feed: feed, interrupt: interruptHandle)
        let size: Int32 = 32768
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            feed.abandon()
            throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory")
        }
        // Safety: `input` is retained by self and outlives the AVIOContext freed in deinit,
        // after the demuxer that reads through it.
        io = avio_alloc_context(buffer, size, 0, Unmanaged.passUnretained(input).toOpaque(), { opaque, buf, n in
            guard let opaque, let buf else { return FFmpegError.invalidData }
            return Unmanaged<FeedInput>.fromOpaque(opaque).takeUnretainedValue().read(into: buf, size: Int(n))
        }, nil, nil)
        guard let io else {
            av_free(buffer)
            feed.abandon()
            throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory")
        }
        io.pointee.seekable = 0
        var o = options
        o.listen = false
        o.realtime = false
        // A publisher whose metadata announced one stream (video, or audio, alone): nothing
        // else can come, so probing stops at its first frames instead of waiting 100 ms of
        // media for a second stream (FLV keeps looking until it has two).
        o.analyzeDurationAfterOpen = AnalyzeHint { [feed] in
            feed.headerFlags.flatMap { $0.announced && ($0.header == 1 || $0.header == 4) ? 0.001 : nil }
        }
        let session: IngestSession
        do {
            session = try IngestSession(url: url, options: o, interruptHandle: interruptHandle, logger: logger, customInput: io, format: "flv")
        } catch {
            feed.abandon()
            throw error
        }
        streams = session.streams
        demuxer = session
        if canBuildPackets() { try goDirect(session) }
    }

    deinit {
        feed.abandon()
        demuxer = nil
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// H.264 and AAC only, every stream the demuxer found one of them, and every tag it read
    /// of those codecs.
    private func canBuildPackets() -> Bool {
        guard !streams.isEmpty, input.videoCodecs.isSubset(of: [Self.directVideoCodec]), input.soundFormats.isSubset(of: [Self.directSoundFormat]) else { return false }
        let videos = streams.filter { $0.mediaType == .video }, audios = streams.filter { $0.mediaType == .audio }
        guard videos.count + audios.count == streams.count, videos.count <= 1, audios.count <= 1 else { return false }
        return videos.allSatisfy { $0.parameters.isH264 && $0.timeBase == .milliseconds }
            && audios.allSatisfy { $0.codecName == "aac" && $0.timeBase == .milliseconds }
    }

    /// Takes what the demuxer read ahead, closes it, and builds packets from here on.
    private func goDirect(_ session: IngestSession) throws(IngestError) {
        input.draining = true
        do {
            while let p = try session.readPacket() { held.append(p) }
        } catch let e as IngestError {
            throw e
        } catch {
            throw IngestError(.failed, source: url, stage: Self.readingStage, detail: "\(error)")
        }
        demuxer = nil
        for s in streams {
            switch s.mediaType {
            case .video:
                let ms = s.frameRate.map { $0 > 0 ? Int64(saturating: (1000 / $0).rounded()) : 0 } ?? 0
                video = Track(index: s.index, extradata: s.parameters.extradata, duration: ms)
            case .audio:
                let sr = Int64(s.parameters.sampleRate)
                audio = Track(index: s.index, extradata: s.parameters.extradata, duration: sr > 0 ? (1024 * 1000 + sr / 2) / sr : 0)
            default: break
            }
        }
        isDirect = true
    }

    public func readPacket() throws -> Packet? {
        if heldNext < held.count {
            defer {
                heldNext += 1
                if heldNext == held.count { held = []; heldNext = 0 }
            }
            return held[heldNext]
        }
        guard isDirect else { return try demuxer?.readPacket() }
        let deadline = MonotonicClock.nanoseconds() &+ Timestamps.nanoseconds(options.readTimeout)
        while true {
            switch feed.next(wait: 0.1) {
            case .end:
                return nil
            case .nothing:
                if interruptHandle.isInterrupted { throw stopped }
                if MonotonicClock.nanoseconds() >= deadline { throw silent }
            case .tag(let tag):
                if let p = try packet(of: tag) { return p }
            }
        }
    }

    public func deliverAll(_ deliver: @escaping (Packet) -> Void) throws {
        while heldNext < held.count {
            deliver(held[heldNext])
            heldNext += 1
        }
        held = []
        heldNext = 0
        guard isDirect else {
            while let p = try demuxer?.readPacket() { deliver(p) }
            return
        }
        // Safety: the packet builder's state (tracks, timestamps, scratch) is touched by one
        // thread at a time: the pusher's while attached, under the feed's lock, which orders
        // it with this thread's use before `attach` and after `detach`.
        feed.attach { [unowned self] tag in
            // A packet that cannot be made (out of memory) is dropped, not the stream.
            if let p = try? self.packet(of: tag) { deliver(p) }
        }
        defer { feed.detach() }
        while true {
            switch feed.waitAttached(wait: 0.25, silence: options.readTimeout) {
            case .ended:
                return
            case .silent:
                throw silent
            case .waiting:
                if interruptHandle.isInterrupted { throw stopped }
            }
        }
    }

    static let readingStage = "reading"
    /// How a read ends on a stop, and on `read_timeout` without a tag.
    private var stopped: IngestError { IngestError(.stopped, source: url, stage: Self.readingStage, detail: "stopped") }
    private var silent: IngestError {
        IngestError(.timedOut, source: url, stage: Self.readingStage, detail: "no answer within \(formatSeconds(options.readTimeout))")
    }

    /// The packet a tag carries, as FFmpeg's FLV demuxer makes it; nil for a tag that carries
    /// none (a sequence header, metadata, a codec the stream does not have).
    private func packet(of tag: FLVFeed.Tag) throws(IngestError) -> Packet? {
        let p = tag.payload
        guard p.count >= 2 else { return nil }
        let track: Track, body: Int, cts: Int64
        var key = true
        switch tag.type {
        case 9:
            // frame type (4 bits) and codec (4 bits); AVC packet type; composition time (SI24).
            guard let v = video, p[0] & 0x0F == Self.directVideoCodec, p.count >= 5 else { return nil }
            let ct = Int32(p[2]) << 16 | Int32(p[3]) << 8 | Int32(p[4])
            switch p[1] {
            case 0:
                let record = Array(p[5...])
                if !record.isEmpty && record != v.extradata { video!.extradata = record; video!.changed = record }
                return nil
            case 1:
                guard p.count > 5 else { return nil }
                track = v
                body = 5
                cts = Int64((ct << 8) >> 8)
                key = p[0] >> 4 == 1
            default:
                return nil   // end of sequence
            }
        case 8:
            guard let a = audio, p[0] >> 4 == Self.directSoundFormat else { return nil }
            if p[1] == 0 {
                let config = Array(p[2...])
                if !config.isEmpty && config != a.extradata { audio!.extradata = config; audio!.changed = config }
                return nil
            }
            guard p.count > 2 else { return nil }
            track = a
            body = 2
            cts = 0
        default:
            return nil
        }
        let dts = timestamp(tag.timestamp)
        let n = p.count - body
        guard av_new_packet(scratch, Int32(n)) >= 0, let data = scratch.pointee.data else {
            throw IngestError(.failed, source: url, stage: Self.readingStage, detail: "out of memory")
        }
        p.withUnsafeBufferPointer { data.update(from: $0.baseAddress! + body, count: n) }
        scratch.pointee.dts = dts
        scratch.pointee.pts = dts + cts
        scratch.pointee.duration = track.duration
        scratch.pointee.stream_index = Int32(track.index)
        scratch.pointee.flags = key ? AV_PKT_FLAG_KEY : 0
        // A new sequence header mid-stream reaches decoders and muxers as FFmpeg's demuxer
        // passes it: side data on the next packet.
        if let setup = track.changed {
            if let side = av_packet_new_side_data(scratch, AV_PKT_DATA_NEW_EXTRADATA, setup.count) {
                setup.withUnsafeBufferPointer { side.update(from: $0.baseAddress!, count: setup.count) }
            }
            if tag.type == 9 { video!.changed = nil } else { audio!.changed = nil }
        }
        do {
            return try Packet(movingFrom: scratch, timeBase: .milliseconds, mediaType: tag.type == 9 ? .video : .audio, arrivalNanos: tag.arrivalNanos)
        } catch {
            av_packet_unref(scratch)
            throw IngestError(.failed, source: url, stage: Self.readingStage, detail: error.description, underlying: error)
        }
    }

    /// A tag's 32-bit millisecond timestamp on a 64-bit line (it wraps after 49.7 days).
    private func timestamp(_ t: UInt32) -> Int64 {
        if let last = lastTimestamp, t < last, last - t > 1 << 31 { epoch += 1 << 32 }
        lastTimestamp = t
        return epoch + Int64(t)
    }
}

/// The FLV bytes libavformat's demuxer reads (header, then the feed's tags), for AVIO.
/// Used on the ingest thread only.
final class FeedInput {
    let feed: FLVFeed
    let interrupt: InterruptHandle
    private var bytes: [UInt8] = []
    private var offset = 0
    private var headerDone = false
    /// Once set, reading ends where the tags already taken end: the demuxer hands on what it
    /// read ahead and is closed.
    var draining = false
    /// FLV video codecs and sound formats among the tags the demuxer read.
    private(set) var videoCodecs: Set<UInt8> = []
    private(set) var soundFormats: Set<UInt8> = []

    init(feed: FLVFeed, interrupt: InterruptHandle) {
        self.feed = feed
        self.interrupt = interrupt
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, size: Int) -> Int32 {
        while offset == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
            offset = 0
            if draining { return FFmpegError.endOfFile }
            switch feed.next(wait: 0.05) {
            case .end: return FFmpegError.endOfFile
            case .nothing: if interrupt.shouldAbort() { return lr_averror_exit() }
            case .tag(let t): append(t)
            }
        }
        let n = min(size, bytes.count - offset)
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: n) }
        offset += n
        return Int32(n)
    }

    private func append(_ t: FLVFeed.Tag) {
        if !headerDone {
            headerDone = true
            let flags = feed.headerFlags?.header ?? (t.type == 8 ? 4 : 1)
            // Signature, version 1, flags, header size 9; PreviousTagSize0.
            bytes += [0x46, 0x4C, 0x56, 1, flags, 0, 0, 0, 9, 0, 0, 0, 0]
        }
        if let first = t.payload.first {
            if t.type == 9 { videoCodecs.insert(first & 0x0F) }
            if t.type == 8 { soundFormats.insert(first >> 4) }
        }
        let n = t.payload.count, ts = t.timestamp
        bytes += [t.type, UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF),
                  UInt8(ts >> 16 & 0xFF), UInt8(ts >> 8 & 0xFF), UInt8(ts & 0xFF), UInt8(ts >> 24), 0, 0, 0]
        bytes += t.payload
        let size = UInt32(11 + n)
        bytes += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
    }
}
