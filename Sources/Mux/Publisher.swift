internal import CFFmpeg
public import MediaCore
public import Demux

/// How to push to a destination.
public struct PublishOptions: Sendable, Hashable {
    /// RTSP ANNOUNCE/RECORD transport (`udp` or `tcp`; `auto` means tcp for publishing).
    public var transport: SourceOptions.Transport = .tcp
    /// Deadline for connecting and writing the header, seconds.
    public var connectTimeout: Double = 5
    /// Deadline for each packet write, seconds.
    public var writeTimeout: Double = 3
    /// Container override (`flv`, `mpegts`, `rtsp`, `mp4` …); nil picks from the URL.
    public var format: String? = nil
    /// RTMPS: the CA file the server's certificate must chain to; nil: the system's. The
    /// certificate and its name are always checked (FFmpeg checks neither by default).
    public var caFile: String? = nil
    /// The system's CA bundle (Debian's ca-certificates).
    public static let systemCAFile = "/etc/ssl/certs/ca-certificates.crt"
    public init() {}
}

/// A destination could not be reached or written.
public struct PublishError: Error, Sendable, CustomStringConvertible {
    public let destination: String
    public let stage: String
    public let detail: String
    public let timedOut: Bool
    public init(destination: String, stage: String, detail: String, timedOut: Bool = false) {
        self.destination = Redactor.redact(destination, hideStreamKey: destination.lowercased().hasPrefix("rtmp"))
        self.stage = stage
        self.detail = Redactor.scrub(detail)
        self.timedOut = timedOut
    }
    public var description: String { "\(destination): \(timedOut ? "timed out" : "failed") while \(stage): \(detail)" }
}

/// Writes packets, without re-encoding, to a URL or file: RTMP (FLV), RTSP (ANNOUNCE/RECORD),
/// SRT, UDP (unicast or multicast) and TCP (MPEG-TS), RTP (MPEG-TS in RTP, RFC 2250), or a file. Every blocking call has a deadline. Confined to
/// one thread.
public final class Publisher {
    public let url: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let handle = InterruptHandle()
    private let options: PublishOptions
    private let scratch: UnsafeMutablePointer<AVPacket>
    private var outTimeBases: [TimeBase] = []
    private var streamMap: [Int: Int] = [:]
    private var headerWritten = false
    private var ioOpened = false
    /// MPEG-TS over UDP: what fills every datagram to seven TS packets.
    private var filler: TSDatagramFiller?
    /// Audio streams whose packets' tails wait for the next packet's datagram (when there is
    /// video: its pictures end the datagrams), so that audio does not cost filling each.
    private var heldTails: Set<Int> = []

    public static func defaultFormat(for url: String) -> String? {
        let lower = url.lowercased()
        if lower.hasPrefix("rtmp") { return "flv" }
        if lower.hasPrefix("rtsp://") { return "rtsp" }
        if lower.hasPrefix("srt://") || lower.hasPrefix("udp://") || lower.hasPrefix("tcp://") { return "mpegts" }
        if lower.hasPrefix("rtp://") { return "rtp_mpegts" }
        return nil
    }

    public init(url: String, streams: [StreamInfo], options: PublishOptions = PublishOptions()) throws(PublishError) {
        self.url = url
        self.options = options
        guard let pkt = av_packet_alloc() else { throw PublishError(destination: url, stage: "opening", detail: "out of memory") }
        scratch = pkt
        // Every stored property is set: if open throws, deinit runs and frees what it made.
        try open(streams: streams)
    }

    deinit {
        if let ctx = context {
            closeIO(ctx)
            avformat_free_context(ctx)
        }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    private func open(streams: [StreamInfo]) throws(PublishError) {
        let format = options.format ?? Publisher.defaultFormat(for: url)
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let r = avformat_alloc_output_context2(&ctx, nil, format, url)
        guard r >= 0, let ctx else {
            throw PublishError(destination: url, stage: "opening", detail: "no muxer for this destination: \(FFmpegError.describe(r))")
        }
        context = ctx
        // Safety: `handle` is retained by self and outlives the context freed in deinit.
        ctx.pointee.interrupt_callback.callback = { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<InterruptHandle>.fromOpaque(opaque).takeUnretainedValue().shouldAbort() ? 1 : 0
        }
        ctx.pointee.interrupt_callback.opaque = Unmanaged.passUnretained(handle).toOpaque()
        ctx.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        ctx.pointee.max_delay = 0
        for s in streams where s.mediaType == .video || s.mediaType == .audio {
            guard let st = avformat_new_stream(ctx, nil) else { throw PublishError(destination: url, stage: "opening", detail: "out of memory") }
            let c = s.parameters.withUnsafeAVCodecParameters { avcodec_parameters_copy(st.pointee.codecpar, $0) }
            if c < 0 { throw PublishError(destination: url, stage: "opening", detail: FFmpegError.describe(c)) }
            st.pointee.codecpar.pointee.codec_tag = 0
            st.pointee.time_base = s.timeBase.rational
            if let fr = s.frameRate, fr > 0 { st.pointee.avg_frame_rate = av_d2q(fr, 1000) }
            streamMap[s.index] = Int(st.pointee.index)
        }
        if streams.contains(where: { $0.mediaType == .video }) {
            heldTails = Set(streams.filter { $0.mediaType == .audio }.map(\.index))
        }
        guard !streamMap.isEmpty else { throw PublishError(destination: url, stage: "opening", detail: "no audio or video stream to publish") }

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        let fmtName = String(cString: ctx.pointee.oformat.pointee.name)
        if fmtName == "rtsp" { av_dict_set(&dict, "rtsp_transport", options.transport == .udp ? "udp" : "tcp", 0) }
        if fmtName == "flv" { av_dict_set(&dict, "flvflags", "no_duration_filesize", 0) }
        if fmtName == "mpegts" {
            av_dict_set(&dict, "muxdelay", "0", 0)
            av_dict_set(&dict, "muxpreload", "0", 0)
            // Video PES lengths written: a receiver's demuxer hands each picture on at once.
            av_dict_set(&dict, "omit_video_pes_length", "0", 0)
        }

        handle.arm(seconds: options.connectTimeout)
        defer { handle.disarm() }
        if ctx.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            var cb = AVIOInterruptCB()
            cb.callback = ctx.pointee.interrupt_callback.callback
            cb.opaque = ctx.pointee.interrupt_callback.opaque
            var ioDict: OpaquePointer? = nil
            defer { av_dict_free(&ioDict) }
            // Seven TS packets a datagram (1316 bytes; RTP's 12-byte header on top), as receivers
            // of MPEG-TS over UDP expect; a `pkt_size=` in the URL still decides.
            if url.lowercased().hasPrefix("udp://") { av_dict_set(&ioDict, "pkt_size", "1316", 0) }
            if url.lowercased().hasPrefix("rtp://") { av_dict_set(&ioDict, "pkt_size", "1328", 0) }
            // RTMPS: the TLS layer under RTMP takes these (libavformat passes them down).
            if url.lowercased().hasPrefix("rtmps://") {
                av_dict_set(&ioDict, "tls_verify", "1", 0)
                av_dict_set(&ioDict, "ca_file", options.caFile ?? PublishOptions.systemCAFile, 0)
            }
            let o = avio_open2(&ctx.pointee.pb, url, AVIO_FLAG_WRITE, &cb, &ioDict)
            if o < 0 { throw failure(o, stage: "connecting") }
            ioOpened = true
            // Every UDP datagram whole: a picture's tail filled out with null packets.
            if fmtName == "mpegts", url.lowercased().hasPrefix("udp://"), let pb = ctx.pointee.pb {
                do {
                    filler = try TSDatagramFiller(inner: pb)
                } catch {
                    throw PublishError(destination: url, stage: "opening", detail: error.description)
                }
                if let filler { ctx.pointee.pb = filler.context }
            }
        }
        let h = avformat_write_header(ctx, &dict)
        if h < 0 { throw failure(h, stage: "writing the header") }
        headerWritten = true
        outTimeBases = (0..<Int(ctx.pointee.nb_streams)).map { TimeBase(ctx.pointee.streams[$0]!.pointee.time_base) }
    }

    private func failure(_ code: Int32, stage: String) -> PublishError {
        PublishError(destination: url, stage: stage, detail: handle.didTimeOut ? "no answer within \(options.connectTimeout) s" : FFmpegError.describe(code), timedOut: handle.didTimeOut)
    }

    /// Writes one packet (its own stream index and time base); packets of streams not
    /// published are ignored.
    public func write(_ packet: Packet) throws(PublishError) {
        try write(packet) { p, tb in av_packet_rescale_ts(p, packet.timeBase.rational, tb) }
    }

    /// Writes one packet with timestamps and duration given in microseconds (a relay's own
    /// continuous timeline).
    public func write(_ packet: Packet, pts: Int64, dts: Int64, duration: Int64) throws(PublishError) {
        try write(packet) { p, tb in
            let us = av_make_q(1, 1_000_000)
            p.pointee.pts = av_rescale_q(pts, us, tb)
            p.pointee.dts = av_rescale_q(dts, us, tb)
            p.pointee.duration = av_rescale_q(duration, us, tb)
        }
    }

    /// References the packet, lets `timestamps` set them in the output stream's time base, writes.
    private func write(_ packet: Packet, timestamps: (UnsafeMutablePointer<AVPacket>, AVRational) -> Void) throws(PublishError) {
        guard let ctx = context, headerWritten, let out = streamMap[packet.streamIndex] else { return }
        let ref = packet.withUnsafeAVPacket { av_packet_ref(scratch, $0) }
        if ref < 0 { throw PublishError(destination: url, stage: "writing", detail: FFmpegError.describe(ref)) }
        scratch.pointee.stream_index = Int32(out)
        timestamps(scratch, outTimeBases[out].rational)
        scratch.pointee.pos = -1
        handle.arm(seconds: options.writeTimeout)
        // av_write_frame does not take ownership and does not buffer for interleaving: lowest latency.
        let r = av_write_frame(ctx, scratch)
        if r >= 0 { filler?.packetEnded(holdTail: heldTails.contains(packet.streamIndex)) }
        handle.disarm()
        av_packet_unref(scratch)
        if r < 0 {
            throw PublishError(destination: url, stage: "writing", detail: handle.didTimeOut ? "no progress within \(options.writeTimeout) s" : FFmpegError.describe(r), timedOut: handle.didTimeOut)
        }
    }

    /// Writes the trailer and closes the connection or file.
    public func finish() {
        guard let ctx = context, headerWritten else { return }
        handle.arm(seconds: options.writeTimeout)
        av_write_trailer(ctx)
        handle.disarm()
        headerWritten = false
        closeIO(ctx)
    }

    /// Closes the connection or file (the filler's tail sent first).
    private func closeIO(_ ctx: UnsafeMutablePointer<AVFormatContext>) {
        if let filler {
            filler.flush()
            ctx.pointee.pb = filler.inner
            self.filler = nil
        }
        if ioOpened { avio_closep(&ctx.pointee.pb); ioOpened = false }
    }

    /// Makes a blocked write return (from another thread).
    public var interruptHandle: InterruptHandle { handle }
}

@available(*, unavailable)
extension Publisher: Sendable {}
