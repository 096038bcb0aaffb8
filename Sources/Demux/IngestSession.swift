internal import CFFmpeg
import Wire
public import MediaCore
public import Logging
import Foundation

/// An open libavformat input: a camera, a server, a publisher pushing to us, or a file.
///
/// Confined to the thread that opened it (the ingest thread). Every blocking call runs under a
/// deadline enforced by FFmpeg's interrupt callback; `interruptHandle.interrupt()` from any
/// thread makes the current call return promptly.
public final class IngestSession: PacketSource {
    public let url: String
    public let options: SourceOptions
    /// The tracks outputs get: every track the container declared but an audio track neither
    /// the probe nor `describeLateTracks` could describe.
    public private(set) var streams: [StreamInfo] = []
    /// Every track the container declared, at its FFmpeg index (what a packet's index looks up).
    private var byIndex: [StreamInfo] = []
    /// Tracks left out of `streams` (undescribed): their packets are dropped.
    private var leftOut: Set<Int> = []
    /// Packets read while describing late tracks, handed on before any other.
    private var prefetched: [Packet] = []
    private var prefetchedNext = 0
    /// Audio tracks described after the probe, whose frames the demuxer cannot time: it never
    /// learnt their sample rate, so of a PES's frames only the first has a timestamp. Each one's
    /// frame length (samples, and the rate), the last timestamp the demuxer gave and the frames since.
    private var untimed: [Int: UntimedAudio] = [:]
    private struct UntimedAudio { var samples: Int64; var rate: Int64; var anchor: Int64?; var frames: Int64 = 0 }
    public private(set) var formatName: String = ""
    /// The RTSP transport actually in use (`auto` resolves to `udp` or `tcp`); nil for non-RTSP.
    public private(set) var transportUsed: SourceOptions.Transport?
    /// Options we passed that the demuxer or protocol did not use (likely typos).
    public private(set) var unusedOptions: [String] = []
    public let interruptHandle: InterruptHandle
    /// Source URL with credentials removed, for logs and errors.
    public let redactedURL: String

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let scratch: UnsafeMutablePointer<AVPacket>
    private let logger: Logger
    private let isFile: Bool
    // realtime pacing and looping of files
    private var paceOriginNanos: UInt64?
    private var paceOriginSeconds: Double = 0
    private var loopOffset: [Int: Int64] = [:]
    /// Read, not yet handed on (realtime files), and what ended the reading ahead.
    private var held = HeldPackets()
    private var heldEnd = HeldEnd.none
    private enum HeldEnd { case none, end, failure(any Error) }
    /// Whether a realtime file may release packets at keyframes (set by whoever consumes it).
    public let pacing: PacingHint?
    /// Whether a video stream was found (keyframe release waits for video keyframes).
    private var hasVideo = false
    private var lastEnd: [Int: Int64] = [:]
    /// Media was lost since the last clean video keyframe.
    private var damagedUntilKeyframe = false
    /// RTP packets the demuxer reported lost or too late, over this session.
    public private(set) var rtpPacketsLost = 0

    /// Bytes from memory instead of a URL (LiveRelay's own ingest), and their container.
    private let customInput: UnsafeMutablePointer<AVIOContext>?
    private let customFormat: String?

    /// Opens the source and probes its streams, within `options.openTimeout`.
    public convenience init(url: String, options: SourceOptions = SourceOptions(), interruptHandle: InterruptHandle = InterruptHandle(), pacing: PacingHint? = nil, logger: Logger = Logger(label: "liverelay.demux")) throws(IngestError) {
        try self.init(url: url, options: options, interruptHandle: interruptHandle, pacing: pacing, logger: logger, customInput: nil, format: nil)
    }

    /// Opens `format` read through `customInput` (which the caller frees after this session),
    /// or `url` when there is none. `url` names the source in errors either way.
    init(url: String, options: SourceOptions, interruptHandle: InterruptHandle, pacing: PacingHint? = nil, logger: Logger, customInput: UnsafeMutablePointer<AVIOContext>?, format: String?) throws(IngestError) {
        self.customInput = customInput
        self.customFormat = format
        self.url = url
        self.pacing = pacing
        self.options = options
        self.interruptHandle = interruptHandle
        self.redactedURL = Redactor.redact(url)
        self.logger = logger
        let scheme = IngestSession.scheme(of: url)
        // A pipe (a publisher's media, handed over by LiveRelay's own ingest) is live, not a file.
        self.isFile = (scheme == "file" || scheme == nil) && !url.hasPrefix("pipe:")
        guard let pkt = av_packet_alloc() else {
            throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory")
        }
        scratch = pkt
        // Every stored property is set from here on: if opening throws, deinit frees `scratch`.
        // One deadline for the whole open, the fallback from UDP to TCP included.
        let end = MonotonicClock.nanoseconds() &+ Timestamps.nanoseconds(options.openTimeout)
        if scheme == "rtsp" && options.transport == .auto && !options.listen {
            do {
                // The RTSP exchange may take the whole deadline; waiting for UDP media, 60 % of
                // what is left after it, so that TCP still has time.
                try open(transport: .udp, until: end, probeShare: 0.6)
            } catch let e where e.kind != .stopped && e.stage == Self.probingStage {
                // The RTSP exchange worked but no UDP media came (a firewall, a NAT): TCP, in
                // the time that is left. A server that never answered is not asked again: the
                // control connection is TCP either way.
                logger.info("UDP did not deliver; retrying over TCP", metadata: ["source": "\(redactedURL)", "error": "\(e)"])
                do {
                    try open(transport: .tcp, until: end)
                } catch let t where t.kind == .timedOut {
                    throw IngestError(.timedOut, source: url, stage: t.stage, detail: "no media within \(formatSeconds(options.openTimeout)) (UDP, then TCP)")
                }
            } catch let e where e.kind == .timedOut {
                throw IngestError(.timedOut, source: url, stage: e.stage, detail: "no answer within \(formatSeconds(options.openTimeout))")
            }
        } else {
            try open(transport: scheme == "rtsp" ? options.transport : nil, until: options.listen ? nil : end)
        }
    }

    deinit {
        close()
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    static func scheme(of url: String) -> String? {
        guard let r = url.utf8Range(of: "://") else { return nil }
        return url[..<r.lowerBound].lowercased()
    }

    private func close() {
        prefetched = []
        prefetchedNext = 0
        leftOut = []
        untimed = [:]
        if context != nil { avformat_close_input(&context) }
    }

    static let probingStage = "probing streams"

    

    /// Seconds left until `deadline` (monotonic nanoseconds), at least a few milliseconds.
    private static func remaining(_ deadline: UInt64) -> Double {
        max(0.005, Double(Int64(bitPattern: deadline &- MonotonicClock.nanoseconds())) / 1e9)
    }

    /// Opens and probes with one transport, all of it before `deadline` (nil: listen mode,
    /// which waits `listenTimeout` for a publisher and then `openTimeout` for its streams).
    private func open(transport: SourceOptions.Transport?, until deadline: UInt64?, probeShare: Double = 1) throws(IngestError) {
        close()
        _ = FFmpegLog.takeRTPLosses() // what an earlier session on this thread left
        guard let ctx = avformat_alloc_context() else {
            throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory")
        }
        // Safety: the handle is retained by `self` and outlives the context, which `close()`
        // frees in deinit; FFmpeg calls back on this thread only, while a call is in progress.
        ctx.pointee.interrupt_callback.callback = { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<InterruptHandle>.fromOpaque(opaque).takeUnretainedValue().shouldAbort() ? 1 : 0
        }
        ctx.pointee.interrupt_callback.opaque = Unmanaged.passUnretained(interruptHandle).toOpaque()

        var passed: [String: String] = [:]
        let scheme = IngestSession.scheme(of: url)
        if let transport, transport != .auto { passed["rtsp_transport"] = transport.rawValue; transportUsed = transport }
        if scheme == "rtsp", let q = options.reorderQueueSize { passed["reorder_queue_size"] = String(q) }
        if scheme == "rtsp", let w = options.reorderWait { passed["max_delay"] = String(Int(w * 1_000_000)) }
        if options.listen {
            switch scheme {
            case "rtmp": passed["listen"] = "1"
            case "rtsp": passed["rtsp_flags"] = "listen"
            case "srt": if !url.utf8Contains("mode=") { passed["mode"] = "listener" }
            case "udp", "tcp": if scheme == "tcp" { passed["listen"] = "1" }
            default: break
            }
        }
        if options.lowLatencyProbe && !isFile {
            passed["probesize"] = "65536"
            passed["analyzeduration"] = "100000"
            passed["fpsprobesize"] = "0"
        }
        for (k, v) in options.extraOptions { passed[k] = v }
        var dict: OpaquePointer? = nil
        for (k, v) in passed { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }

        let openDeadline = deadline.map(Self.remaining) ?? options.listenTimeout
        interruptHandle.arm(seconds: openDeadline)
        var ctxOpt: UnsafeMutablePointer<AVFormatContext>? = ctx
        var format: UnsafePointer<AVInputFormat>? = nil
        if let customInput {
            ctx.pointee.pb = customInput
            ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            format = customFormat.flatMap { av_find_input_format($0) }
        }
        let r = avformat_open_input(&ctxOpt, url, format, &dict)
        // avformat_open_input frees the context and nils the pointer on failure.
        if r < 0 {
            interruptHandle.disarm()
            throw IngestError.classify(FFmpegError(code: r, operation: "avformat_open_input"), source: url,
                                       stage: options.listen ? "waiting for a publisher" : "opening",
                                       handle: interruptHandle, deadline: openDeadline)
        }
        context = ctxOpt
        unusedOptions = IngestSession.keys(dict).sorted()
        if let seconds = options.analyzeDurationAfterOpen?.seconds(), seconds > 0 {
            ctx.pointee.max_analyze_duration = Int64(seconds * 1_000_000)
        }

        let probeDeadline = deadline.map { Self.remaining($0) * probeShare } ?? options.openTimeout
        interruptHandle.arm(seconds: probeDeadline)
        let f = avformat_find_stream_info(ctxOpt, nil)
        interruptHandle.disarm()
        if f < 0 {
            let e = IngestError.classify(FFmpegError(code: f, operation: "avformat_find_stream_info"), source: url,
                                         stage: Self.probingStage, handle: interruptHandle, deadline: probeDeadline)
            close()
            throw e
        }
        guard let c = context else { throw IngestError(.failed, source: url, stage: "opening", detail: "no context") }
        formatName = c.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        var found: [StreamInfo] = []
        for i in 0..<Int(c.pointee.nb_streams) {
            guard let st = c.pointee.streams[i], let par = st.pointee.codecpar else { continue }
            do {
                let params = try CodecParameters(copying: par)
                let fr = st.pointee.avg_frame_rate.den != 0 && st.pointee.avg_frame_rate.num != 0
                    ? av_q2d(st.pointee.avg_frame_rate)
                    : (st.pointee.r_frame_rate.den != 0 && st.pointee.r_frame_rate.num != 0 ? av_q2d(st.pointee.r_frame_rate) : nil)
                found.append(StreamInfo(index: i, timeBase: TimeBase(st.pointee.time_base), frameRate: params.mediaType == .video ? fr : nil, parameters: params))
            } catch {
                throw IngestError(.failed, source: url, stage: "probing streams", detail: error.description, underlying: error)
            }
        }
        byIndex = found
        streams = found
        hasVideo = found.contains { $0.mediaType == .video }
        if !isFile { try describeLateTracks(until: deadline) }
        if !unusedOptions.isEmpty {
            logger.warning("options not used by FFmpeg (typo?)", metadata: ["source": "\(redactedURL)", "options": "\(unusedOptions.sorted().joined(separator: ","))"])
        }
    }

    /// An audio track the probe could not describe: declared, but its first packet came after
    /// the low-latency probe's 0.1 s (a muxer that holds its audio back), so it has no sample
    /// rate or channels, which every muxer refuses ("sample rate not set"). (A video track
    /// without a picture size is kept as it is: MPEG-TS takes it, and the decoder learns the
    /// size at the first keyframe.)
    private static func isUndescribed(_ s: StreamInfo) -> Bool {
        s.mediaType == .audio && (s.parameters.sampleRate <= 0 || s.parameters.channels <= 0)
    }

    /// Describes the audio tracks the probe could not from their first packets (each decoded
    /// once), reading on for at most 1.5 s (or to `deadline`) and 512 packets; what is read
    /// meanwhile is handed on afterwards, in order. A track still undescribed then is left out
    /// of `streams`, and said once, so that the outputs carry the rest. A read that fails fails
    /// the open, as it would have failed the first read (a stalled source can take the read
    /// deadline past the 1.5 s).
    private func describeLateTracks(until deadline: UInt64?) throws(IngestError) {
        var missing = Set(byIndex.filter(Self.isUndescribed).map(\.index))
        guard !missing.isEmpty, let ctx = context else { return }
        let budget = min(1.5, deadline.map(Self.remaining) ?? 1.5)
        let end = MonotonicClock.nanoseconds() &+ Timestamps.nanoseconds(budget)
        var read: [Packet] = []
        var ended = false
        while !missing.isEmpty, read.count < 512, MonotonicClock.nanoseconds() < end {
            let p: Packet?
            do {
                p = try readNext()
            } catch let e as IngestError {
                throw e
            } catch {
                throw IngestError(.failed, source: url, stage: "reading", detail: "\(error)")
            }
            guard let p else { ended = true; break }
            read.append(p)
            let i = p.streamIndex
            guard missing.contains(i), i >= 0, i < Int(ctx.pointee.nb_streams), let k = byIndex.firstIndex(where: { $0.index == i }),
                  let st = ctx.pointee.streams[i], let par = st.pointee.codecpar, let params = Self.learnParameters(par, from: p) else { continue }
            let described = StreamInfo(index: i, timeBase: byIndex[k].timeBase, frameRate: byIndex[k].frameRate, parameters: params)
            guard !Self.isUndescribed(described) else { continue }
            byIndex[k] = described
            missing.remove(i)
            // AAC's frames are fixed in length: the demuxer's parser leaves the rate to the
            // decoder (for HE-AAC), so it times only the first frame of each PES.
            if described.codecName == "aac", params.frameSize > 0 {
                untimed[i] = UntimedAudio(samples: Int64(params.frameSize), rate: Int64(params.sampleRate), anchor: p.dts ?? p.pts)
            }
            logger.info("track described from its first packet (after the probe)", metadata: ["source": "\(redactedURL)", "track": "\(i)", "codec": "\(described.codecName)"])
        }
        prefetched = missing.isEmpty ? read : read.filter { !missing.contains($0.streamIndex) }
        prefetchedNext = 0
        leftOut = missing
        streams = byIndex.filter { !missing.contains($0.index) }
        hasVideo = streams.contains { $0.mediaType == .video }
        let why = ended ? "the source ended first" : read.count >= 512 ? "none in the first 512 packets" : "none within \(formatSeconds(budget))"
        for s in byIndex where missing.contains(s.index) {
            logger.warning("track left out: the probe could not describe it, and no packet of it did (\(why))",
                           metadata: ["source": "\(redactedURL)", "track": "\(s.index)", "media": "\(s.mediaType.rawValue)", "codec": "\(s.codecName)"])
        }
    }

    /// Times a frame of an untimed audio track: one the demuxer left without a timestamp starts a
    /// frame after the one before it (counted from the last timestamp it gave, so that rounding
    /// does not add up); one it timed is the new anchor.
    private static func time(_ pkt: UnsafeMutablePointer<AVPacket>, _ track: UntimedAudio, _ timeBase: TimeBase) -> UntimedAudio {
        var u = track
        let given = pkt.pointee.dts != noTimestamp ? pkt.pointee.dts : pkt.pointee.pts
        // One frame in the time base: samples / rate seconds, as num/den ticks of it.
        let (perFrame, o1) = u.samples.multipliedReportingOverflow(by: Int64(timeBase.denominator))
        let (unit, o2) = u.rate.multipliedReportingOverflow(by: Int64(timeBase.numerator))
        guard !o1, !o2, unit > 0 else { return u }
        if given != noTimestamp {
            u.anchor = given
            u.frames = 0
        } else if let anchor = u.anchor {
            u.frames += 1
            let (ticks, o3) = perFrame.multipliedReportingOverflow(by: u.frames)
            guard !o3 else { return u }
            let t = Timestamps.add(anchor, ticks / unit)
            pkt.pointee.pts = t
            pkt.pointee.dts = t
        }
        if pkt.pointee.duration <= 0 { pkt.pointee.duration = perFrame / unit }
        return u
    }

    /// What a decoder learns of a track from `packet` (sample rate, channels, frame size), on a
    /// copy of the track's parameters (the demuxer's own stay as they are); nil when it did not
    /// decode.
    private static func learnParameters(_ par: UnsafePointer<AVCodecParameters>, from packet: Packet) -> CodecParameters? {
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else { return nil }
        var dec = avcodec_alloc_context3(codec)
        var frame = av_frame_alloc()
        var learnt = avcodec_parameters_alloc()
        defer { avcodec_free_context(&dec); av_frame_free(&frame); avcodec_parameters_free(&learnt) }
        guard let dec, let frame, let learnt, avcodec_parameters_to_context(dec, par) >= 0 else { return nil }
        dec.pointee.thread_count = 1
        guard avcodec_open2(dec, codec, nil) >= 0,
              packet.withUnsafeAVPacket({ avcodec_send_packet(dec, $0) }) >= 0,
              avcodec_receive_frame(dec, frame) >= 0,
              avcodec_parameters_from_context(learnt, dec) >= 0 else { return nil }
        return try? CodecParameters(copying: learnt)
    }

    private static func keys(_ dict: OpaquePointer?) -> [String] {
        var out: [String] = []
        var e: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while true {
            e = av_dict_get(dict, "", e, AV_DICT_IGNORE_SUFFIX)
            guard let entry = e else { break }
            out.append(String(cString: entry.pointee.key))
        }
        return out
    }

    /// Reads the next packet within `options.readTimeout`. Nil at the end of the stream (for a
    /// push ingest: the publisher left). A realtime file hands each packet on when its timestamp
    /// comes due (like `ffmpeg -re`), or, while `pacing` says no consumer needs packets sooner,
    /// the packets up to a keyframe together when the keyframe comes due.
    public func readPacket() throws -> Packet? {
        guard options.realtime && isFile else { return try readNext() }
        if held.isEmpty {
            switch heldEnd {
            case .none: break
            case .end: heldEnd = .none; return nil
            case .failure(let e): heldEnd = .none; throw e
            }
            guard let p = try readNext() else { return nil }
            held.append(p, due: due(of: p))
        }
        if pacing?.releasesAtKeyframes == true { readAheadToKeyframe() }
        // Waits for the last packet read ahead (keyframe pacing), else for the first; the hint is
        // read again while waiting, so a consumer that starts needing every packet gets them on time.
        try sleep(until: { self.pacing?.releasesAtKeyframes == true ? self.held.lastDue : self.held.firstDue })
        let p = held.removeFirst()
        p.arrivalNanos = MonotonicClock.nanoseconds()
        return p
    }

    /// Reads on until a video keyframe (or 1 s of stream, or 256 packets): the packets a
    /// keyframe-woken consumer takes together, released with one wake-up instead of one each
    /// (on this kind of machine a wake-up costs ~0.1 ms of CPU, a packet read ~0.01 ms).
    private func readAheadToKeyframe() {
        guard case .none = heldEnd else { return }
        while let last = held.last, !(last.isKeyframe && (last.mediaType == .video || !hasVideo)),
              held.count < 256, held.lastDue &- held.firstDue < 1_000_000_000 {
            do {
                guard let p = try readNext() else { heldEnd = .end; return }
                held.append(p, due: due(of: p))
            } catch {
                heldEnd = .failure(error) // after the packets already read
                return
            }
        }
    }

    /// The next packet from the demuxer, without pacing.
    private func readNext() throws -> Packet? {
        if prefetchedNext < prefetched.count {
            let p = prefetched[prefetchedNext]
            prefetchedNext += 1
            if prefetchedNext == prefetched.count { prefetched = []; prefetchedNext = 0 }
            return p
        }
        guard let ctx = context else { return nil }
        while true {
            interruptHandle.arm(seconds: options.readTimeout)
            let r = av_read_frame(ctx, scratch)
            interruptHandle.disarm()
            if r < 0 {
                let err = FFmpegError(code: r, operation: "av_read_frame")
                if err.isEndOfFile && options.loop && isFile && !interruptHandle.isInterrupted {
                    try rewind()
                    continue
                }
                if err.isEndOfFile && !interruptHandle.didTimeOut { return nil }
                if options.listen && r == FFmpegError.io && !interruptHandle.didTimeOut && !interruptHandle.isInterrupted { return nil }
                if err.isTryAgain { continue }
                throw IngestError.classify(err, source: url, stage: "reading", handle: interruptHandle, deadline: options.readTimeout)
            }
            let arrival = MonotonicClock.nanoseconds()
            let index = Int(scratch.pointee.stream_index)
            guard index >= 0, index < byIndex.count, leftOut.isEmpty || !leftOut.contains(index) else { av_packet_unref(scratch); continue }
            // Two fields, not a copy of the StreamInfo (retains and releases per packet).
            let timeBase = byIndex[index].timeBase, mediaType = byIndex[index].mediaType
            if !untimed.isEmpty, let u = untimed[index] { untimed[index] = Self.time(scratch, u, timeBase) }
            if options.loop, let off = loopOffset[index], off != 0 {
                if scratch.pointee.pts != noTimestamp { scratch.pointee.pts = Timestamps.add(scratch.pointee.pts, off) }
                if scratch.pointee.dts != noTimestamp { scratch.pointee.dts = Timestamps.add(scratch.pointee.dts, off) }
            }
            if options.loop {
                let t = scratch.pointee.dts != noTimestamp ? scratch.pointee.dts : scratch.pointee.pts
                if t != noTimestamp { lastEnd[index] = max(lastEnd[index] ?? .min, Timestamps.add(t, max(scratch.pointee.duration, 1))) }
            }
            // RTSP: once a sender report came, pts 0 is `start_time_realtime` on the sender's clock.
            let realtime = ctx.pointee.start_time_realtime
            let pts = scratch.pointee.pts
            do {
                let p = try Packet(movingFrom: scratch, timeBase: timeBase, mediaType: mediaType, arrivalNanos: arrival)
                markDamage(p)
                if realtime != noTimestamp && realtime > 0 && pts != noTimestamp && timeBase.denominator > 0 {
                    p.senderWallMicros = realtime &+ Int64(saturating: (Double(pts) * Double(timeBase.numerator) / Double(timeBase.denominator) * 1_000_000).rounded())
                }
                return p
            } catch {
                throw IngestError(.failed, source: url, stage: "reading", detail: error.description, underlying: error)
            }
        }
    }

    /// Marks video packets damaged from a loss up to the next clean keyframe. Losses show as
    /// RTP packets FFmpeg reports missed or too late (RTSP over UDP: it says so only in its
    /// log, with no stream named, so a loss on any track counts), or as a packet the demuxer
    /// flags corrupt (MPEG-TS continuity errors over UDP or SRT).
    private func markDamage(_ p: Packet) {
        let lost = FFmpegLog.takeRTPLosses()
        if lost > 0 {
            rtpPacketsLost += lost
            p.lostBefore = lost
        }
        if lost > 0 || (p.isCorrupt && p.mediaType == .video) {
            damagedUntilKeyframe = true
        } else if p.isKeyframe && p.mediaType == .video {
            damagedUntilKeyframe = false
        }
        if p.mediaType == .video { p.isDamaged = damagedUntilKeyframe }
    }

    /// When a packet comes due on the wall clock: its timestamp after the first packet's, from
    /// when the first was read. 0 (at once) without a timestamp.
    private func due(of packet: Packet) -> UInt64 {
        guard let t = packet.dts ?? packet.pts else { return 0 }
        let seconds = packet.timeBase.seconds(t)
        guard let origin = paceOriginNanos else {
            paceOriginNanos = MonotonicClock.nanoseconds()
            paceOriginSeconds = seconds
            return paceOriginNanos!
        }
        return origin &+ Timestamps.nanoseconds(seconds - paceOriginSeconds)
    }

    /// Sleeps until `target()` (read again after each nap), at most 100 ms at a time so a stop
    /// is seen soon. One nap per release at usual frame rates.
    private func sleep(until target: () -> UInt64) throws(IngestError) {
        while true {
            if interruptHandle.isInterrupted {
                throw IngestError(.stopped, source: url, stage: "reading", detail: "stopped")
            }
            let now = MonotonicClock.nanoseconds(), due = target()
            if now >= due { return }
            usleep(UInt32(min(due - now, 100_000_000) / 1000))
        }
    }

    private func rewind() throws(IngestError) {
        guard let ctx = context else { return }
        // The next pass starts where this one ended, per stream: timestamps keep rising.
        for s in streams {
            let end = lastEnd[s.index] ?? 0
            let firstOfFile = (ctx.pointee.streams[s.index]?.pointee.start_time).flatMap { $0 == noTimestamp ? nil : $0 } ?? 0
            loopOffset[s.index] = end - firstOfFile
        }
        let r = av_seek_frame(ctx, -1, 0, AVSEEK_FLAG_BACKWARD)
        if r < 0 {
            throw IngestError.classify(FFmpegError(code: r, operation: "av_seek_frame"), source: url, stage: "looping", handle: interruptHandle, deadline: 0)
        }
    }
}

@available(*, unavailable)
extension IngestSession: Sendable {}
