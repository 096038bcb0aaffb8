internal import CFFmpeg
public import MediaCore
import Wire

/// The container of HLS media segments.
public enum FragmentFormat: String, Sendable, Hashable {
    /// MPEG-TS: every segment starts with PAT/PMT, no init segment.
    case mpegts
    /// Fragmented MP4 (CMAF): an init segment (`ftyp`+`moov`), then `moof`+`mdat` fragments.
    case fmp4
}

/// Muxes packets, without re-encoding, into memory and hands out the bytes written since the
/// last cut: a whole HLS segment, or one LL-HLS part. Timestamps come in microseconds, already
/// made continuous by the caller. Confined to one thread.
public final class FragmentMuxer {
    public let format: FragmentFormat
    /// fMP4: `ftyp` + `moov`, to be served as the playlist's `EXT-X-MAP`. Empty for MPEG-TS.
    public private(set) var initSegment: [UInt8] = []
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var io: MemoryIO?
    private let scratch: UnsafeMutablePointer<AVPacket>
    private var streamMap: [Int: Int] = [:]
    private var outTimeBases: [AVRational] = []
    private var headerWritten = false
    private var pendingHeaders = false
    /// MPEG-TS, per output stream: Annex B parameter sets to put in front of keyframes that
    /// arrive without them (RTSP cameras send them once, in the SDP), so every segment decodes.
    private var parameterSets: [Int: (sets: [UInt8], hevc: Bool)] = [:]
    /// MPEG-TS, per output stream: the parameter sets in the packets' own form (Annex B, or
    /// length-prefixed from an avcC), for a segment that has to start without a keyframe (a
    /// late one): a player that reads the segment's codec from its first bytes (Chromium's own
    /// HLS player) finds them there.
    private var segmentStartSets: [Int: [UInt8]] = [:]
    /// Output streams that have had a packet since the last cut.
    private var startedSinceCut: Set<Int> = []
    private let keepsTimes: Bool

    /// - Parameter keepsTimes: fMP4 only: each track's decode time (`tfdt`) is the packets' own,
    ///   not rebased to zero, so files cut from one session continue one another's times.
    public init(format: FragmentFormat, streams: [StreamInfo], keepsTimes: Bool = false) throws(FFmpegError) {
        self.format = format
        self.keepsTimes = keepsTimes
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        // Every stored property is set: if open throws, deinit frees what it made.
        try open(streams: streams)
    }

    deinit {
        if let ctx = context {
            ctx.pointee.pb = nil
            avformat_free_context(ctx)
        }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// MKTAG('h', 'v', 'c', '1').
    static let hvc1 = UInt32(UInt8(ascii: "h")) | UInt32(UInt8(ascii: "v")) << 8 | UInt32(UInt8(ascii: "c")) << 16 | UInt32(UInt8(ascii: "1")) << 24

    private func open(streams: [StreamInfo]) throws(FFmpegError) {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try ffcheck(avformat_alloc_output_context2(&ctx, nil, format == .mpegts ? "mpegts" : "mp4", nil), "avformat_alloc_output_context2")
        guard let ctx else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_alloc_output_context2") }
        context = ctx
        let io = try MemoryIO(bufferSize: 65536)
        self.io = io
        ctx.pointee.pb = io.context
        // No flush per packet: bytes stay in the AVIO buffer until `cut` (fewer callbacks).
        ctx.pointee.max_delay = 0
        for s in streams where s.mediaType == .video || s.mediaType == .audio {
            guard let st = avformat_new_stream(ctx, nil) else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_new_stream") }
            try ffcheck(s.parameters.withUnsafeAVCodecParameters { avcodec_parameters_copy(st.pointee.codecpar, $0) }, "avcodec_parameters_copy")
            // H.265 in MP4 as `hvc1` (FFmpeg's default is `hev1`): what Safari, HLS (RFC 8216bis
            // §3.3) and Apple's players require.
            st.pointee.codecpar.pointee.codec_tag = format == .fmp4 && s.parameters.isHEVC ? Self.hvc1 : 0
            st.pointee.time_base = av_make_q(1, s.mediaType == .audio && s.parameters.sampleRate > 0 ? Int32(s.parameters.sampleRate) : 90000)
            if let fr = s.frameRate, fr > 0 { st.pointee.avg_frame_rate = av_d2q(fr, 1000) }
            streamMap[s.index] = Int(st.pointee.index)
            if format == .mpegts, s.parameters.isH264 || s.parameters.isHEVC {
                let extra = s.parameters.withUnsafeAVCodecParameters { par -> [UInt8] in
                    guard let d = par.pointee.extradata, par.pointee.extradata_size > 4 else { return [] }
                    return Array(UnsafeBufferPointer(start: d, count: Int(par.pointee.extradata_size)))
                }
                // Annex B extradata only: avcC/hvcC is converted by the muxer's own bitstream filter.
                if H264.startsWithStartCode(extra) {
                    parameterSets[Int(st.pointee.index)] = (extra, s.parameters.isHEVC)
                    segmentStartSets[Int(st.pointee.index)] = extra
                } else if s.parameters.isH264, let sets = AVCDecoderConfiguration(parsing: extra)?.lengthPrefixedParameterSets {
                    segmentStartSets[Int(st.pointee.index)] = sets
                }
            }
        }
        guard !streamMap.isEmpty else { throw FFmpegError(code: FFmpegError.invalidData, operation: "no audio or video stream to segment") }
        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        switch format {
        case .mpegts:
            av_dict_set(&dict, "muxdelay", "0", 0)
            av_dict_set(&dict, "muxpreload", "0", 0)
            // A video PES says its length (when under 64 KiB): a demuxer hands the picture on
            // when its last byte comes, not when the next picture's PES starts (a frame later).
            av_dict_set(&dict, "omit_video_pes_length", "0", 0)
        case .fmp4:
            // Fragments only when told (each cut), init segment written at once, no index or trailer.
            av_dict_set(&dict, "movflags", "+frag_custom+empty_moov+default_base_moof+skip_sidx+skip_trailer" + (keepsTimes ? "+frag_discont" : ""), 0)
            if keepsTimes {
                // libavformat would shift the first packet to zero (make_zero, no edit list):
                // times are kept as given, and without an edit list.
                av_dict_set(&dict, "use_editlist", "0", 0)
                ctx.pointee.avoid_negative_ts = 1 // AVFMT_AVOID_NEG_TS_MAKE_NON_NEGATIVE
            }
        }
        try ffcheck(avformat_write_header(ctx, &dict), "avformat_write_header")
        headerWritten = true
        io.flush()
        outTimeBases = (0..<Int(ctx.pointee.nb_streams)).map { ctx.pointee.streams[$0]!.pointee.time_base }
        if format == .fmp4 {
            initSegment = io.sink.bytes
        }
        io.sink.bytes.removeAll(keepingCapacity: true)
        pendingHeaders = true
    }

    /// True when the packet's stream is one this muxer carries.
    public func carries(streamIndex: Int) -> Bool { streamMap[streamIndex] != nil }

    /// Writes one packet with the given timestamps and duration, in microseconds.
    public func write(_ packet: Packet, pts: Int64?, dts: Int64?, duration: Int64) throws(FFmpegError) {
        guard let ctx = context, headerWritten, let out = streamMap[packet.streamIndex] else { return }
        if pendingHeaders && format == .mpegts {
            // A segment of its own: PAT/PMT again before its first packet.
            av_opt_set(ctx.pointee.priv_data, "mpegts_flags", "resend_headers", 0)
        }
        pendingHeaders = false
        defer { av_packet_unref(scratch) }
        let segmentStart = startedSinceCut.insert(out).inserted
        if segmentStart && !packet.isKeyframe, let sets = segmentStartSets[out] {
            try AnnexB.prepend(sets, to: packet, into: scratch)
        } else {
            try AnnexB.reference(packet, into: scratch, parameterSets: parameterSets[out])
        }
        let us = av_make_q(1, 1_000_000), tb = outTimeBases[out]
        scratch.pointee.stream_index = Int32(out)
        scratch.pointee.pts = pts.map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.dts = dts.map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.duration = av_rescale_q(duration, us, tb)
        scratch.pointee.pos = -1
        try ffcheck(av_write_frame(ctx, scratch), "av_write_frame")
    }

    /// Writes out the fragment (fMP4: moof+mdat) or buffered PES data (MPEG-TS), into `io`.
    private func flush(_ io: MemoryIO) throws(FFmpegError) {
        guard let ctx = context else { return }
        let r = av_write_frame(ctx, nil)
        if r < 0 { throw FFmpegError(code: r, operation: "av_write_frame(flush)") }
        io.flush()
    }

    /// Lends the bytes written since the last call without ending a segment (buffered PES data
    /// flushed): for a stream sent on as it is muxed, MPEG-TS over RTP.
    public func drain<T>(_ body: (UnsafeBufferPointer<UInt8>) -> T) throws(FFmpegError) -> T {
        guard let io, headerWritten else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        try flush(io)
        defer { io.sink.bytes.removeAll(keepingCapacity: true) }
        return io.sink.bytes.withUnsafeBufferPointer(body)
    }

    /// Ends the current segment or part and returns its bytes.
    public func cut() throws(FFmpegError) -> [UInt8] {
        guard let io, headerWritten else { return [] }
        try flush(io)
        // A copy of exactly its size: the working buffer keeps its capacity (grown by doubling,
        // up to twice a segment) for the next one, instead of every segment or part kept in the
        // HLS window holding a buffer of that capacity.
        let n = io.sink.bytes.count
        let out = io.sink.bytes.withUnsafeBufferPointer { src in
            [UInt8](unsafeUninitializedCapacity: n) { dst, count in
                if n > 0 { dst.baseAddress!.update(from: src.baseAddress!, count: n) }
                count = n
            }
        }
        io.sink.bytes.removeAll(keepingCapacity: true)
        if format == .mpegts { pendingHeaders = true }
        startedSinceCut.removeAll(keepingCapacity: true)
        return out
    }
}

@available(*, unavailable)
extension FragmentMuxer: Sendable {}
