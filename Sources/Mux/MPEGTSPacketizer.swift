internal import CFFmpeg
public import MediaCore

/// Every track of a stream in one MPEG transport stream, carried in RTP (RFC 2250, static
/// payload type 33: `MP2T/90000`), for RTSP clients that take nothing else. The one that
/// matters: VLC built without live555 (Debian's and Ubuntu's packages), whose `rtsp://` handler
/// is its SAT>IP module: it sends SETUP on the URL itself, no DESCRIBE, and reads the RTP
/// payload as a transport stream.
///
/// FFmpeg's `mpegts` muxer writes the stream into memory; this type cuts it into RTP itself,
/// because FFmpeg's `rtp_mpegts` holds the tail of every picture until the next one fills a
/// packet (a frame interval of delay). Here each media packet leaves at once, in packets of at
/// most seven TS packets. Timestamps come in microseconds, already made continuous by the
/// caller. Confined to one thread.
public final class MPEGTSPacketizer: RTPPacketizing {
    public static let payloadType: UInt8 = 33
    private static let tsPacket = 188

    public let tracks: [RTPPacketizer.Track]
    public let sdp: String
    public private(set) var skipped: [String] = []

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private let sink = FragmentMuxer.ByteSink()
    private let scratch: UnsafeMutablePointer<AVPacket>
    private var streamMap: [Int: Int] = [:]
    private var outTimeBases: [AVRational] = []
    private var parameterSets: [Int: (sets: [UInt8], hevc: Bool)] = [:]
    private let payloadSize: Int
    private var sequence = UInt16.random(in: 0...UInt16.max)
    private let ssrc = UInt32.random(in: 1...UInt32.max)
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    private var lastTimestamp: Int64 = .min

    /// Codecs an MPEG-TS carries that players expect there.
    static let carried: Set<String> = ["h264", "hevc", "mpeg2video", "mpeg4", "aac", "mp3", "mp2", "ac3", "eac3", "opus"]

    /// `maxPacketSize`: the largest RTP packet, headers included (seven TS packets fit 1400).
    public init(streams: [StreamInfo], title: String, maxPacketSize: Int = 1400) throws(FFmpegError) {
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        payloadSize = max(1, (maxPacketSize - 12) / Self.tsPacket) * Self.tsPacket
        tracks = [RTPPacketizer.Track(sourceIndex: -1, mediaType: .video, codecName: "mp2t", control: "streamid=0")]
        let name = title.isEmpty ? "LiveRelay" : String(title.unicodeScalars.filter { $0.value >= 0x20 && $0 != "\u{7F}" })
        sdp = ["v=0", "o=- 0 0 IN IP4 127.0.0.1", "s=\(name)", "c=IN IP4 0.0.0.0", "t=0 0",
               "m=video 0 RTP/AVP 33", "a=rtpmap:33 MP2T/90000", "a=control:streamid=0"].joined(separator: "\r\n") + "\r\n"
        // Every stored property is set: if open throws, deinit frees what it made.
        try open(streams: streams, title: name)
    }

    deinit {
        if let ctx = context {
            ctx.pointee.pb = nil
            avformat_free_context(ctx)
        }
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    private func open(streams: [StreamInfo], title: String) throws(FFmpegError) {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try ffcheck(avformat_alloc_output_context2(&ctx, nil, "mpegts", nil), "avformat_alloc_output_context2")
        guard let ctx else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_alloc_output_context2") }
        context = ctx
        let size: Int32 = 32768
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_malloc")
        }
        // Safety: `sink` is retained by self and outlives the AVIOContext freed in deinit.
        io = avio_alloc_context(buffer, size, 1, Unmanaged.passUnretained(sink).toOpaque(), nil, { opaque, buf, n in
            guard let opaque, let buf, n > 0 else { return n }
            Unmanaged<FragmentMuxer.ByteSink>.fromOpaque(opaque).takeUnretainedValue().bytes.append(contentsOf: UnsafeBufferPointer(start: buf, count: Int(n)))
            return n
        }, nil)
        guard let io else {
            av_free(buffer)
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avio_alloc_context")
        }
        io.pointee.seekable = 0
        ctx.pointee.pb = io
        ctx.pointee.max_delay = 0
        for s in streams where s.mediaType == .video || s.mediaType == .audio {
            guard Self.carried.contains(s.codecName) else {
                skipped.append("\(s.mediaType.rawValue) \(s.codecName): not carried in MPEG-TS")
                continue
            }
            guard let st = avformat_new_stream(ctx, nil) else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_new_stream") }
            try ffcheck(s.parameters.withUnsafeAVCodecParameters { avcodec_parameters_copy(st.pointee.codecpar, $0) }, "avcodec_parameters_copy")
            st.pointee.codecpar.pointee.codec_tag = 0
            st.pointee.time_base = av_make_q(1, 90000)
            streamMap[s.index] = Int(st.pointee.index)
            if s.parameters.isH264 || s.parameters.isHEVC {
                let extra = s.parameters.extradata
                if AnnexB.startsWithStartCode(extra) { parameterSets[Int(st.pointee.index)] = (extra, s.parameters.isHEVC) }
            }
        }
        guard !streamMap.isEmpty else {
            throw FFmpegError(code: FFmpegError.invalidData, operation: "no track an MPEG-TS carries (\(skipped.joined(separator: "; ")))")
        }
        av_dict_set(&ctx.pointee.metadata, "service_name", title, 0)
        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        // Nothing held back: PCR at the packets' own time, and every audio packet its own PES
        // (by default the muxer gathers ~3 KB of audio first).
        av_dict_set(&dict, "muxdelay", "0", 0)
        av_dict_set(&dict, "muxpreload", "0", 0)
        av_dict_set(&dict, "pes_payload_size", "0", 0)
        try ffcheck(avformat_write_header(ctx, &dict), "avformat_write_header")
        outTimeBases = (0..<Int(ctx.pointee.nb_streams)).map { ctx.pointee.streams[$0]!.pointee.time_base }
        // PAT and PMT, written with the first packet's datagrams.
        avio_flush(io)
    }

    public func track(forStream index: Int) -> Int? { streamMap[index] == nil ? nil : 0 }

    /// Muxes one packet and returns the RTP packets that carry it (and anything written before
    /// it: PAT, PMT), each ≤ seven TS packets, all stamped with the packet's decoding time.
    public func packetize(_ packet: Packet, pts: Int64?, dts: Int64?) throws(FFmpegError) -> [RTPPacketizer.Datagram] {
        guard let ctx = context, let out = streamMap[packet.streamIndex] else { return [] }
        defer { av_packet_unref(scratch) }
        try AnnexB.reference(packet, into: scratch, parameterSets: parameterSets[out])
        let us = av_make_q(1, 1_000_000), tb = outTimeBases[out]
        scratch.pointee.stream_index = Int32(out)
        scratch.pointee.pts = (pts ?? dts).map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.dts = (dts ?? pts).map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.duration = 0
        scratch.pointee.pos = -1
        try ffcheck(av_write_frame(ctx, scratch), "av_write_frame")
        avio_flush(ctx.pointee.pb)
        defer { sink.bytes.removeAll(keepingCapacity: true) }
        // The RTP clock: the packet's decoding time at 90 kHz, never going back (audio and video
        // interleave a few milliseconds apart).
        let at = max(lastTimestamp, (dts ?? pts ?? 0) * 9 / 100)
        lastTimestamp = at
        return Self.cut(sink.bytes, payloadSize: payloadSize, sequence: &sequence,
                        timestamp: timestampBase &+ UInt32(truncatingIfNeeded: at), ssrc: ssrc)
    }

    /// `bytes` (whole TS packets) in RTP packets of at most `payloadSize` bytes of payload.
    static func cut(_ bytes: [UInt8], payloadSize: Int, sequence: inout UInt16, timestamp: UInt32, ssrc: UInt32) -> [RTPPacketizer.Datagram] {
        var out: [RTPPacketizer.Datagram] = []
        out.reserveCapacity(bytes.count / payloadSize + 1)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + payloadSize)
            var p = [UInt8](repeating: 0, count: 12)
            p.reserveCapacity(12 + end - start)
            p[0] = 0x80
            p[1] = payloadType
            p[2] = UInt8(sequence >> 8); p[3] = UInt8(sequence & 0xFF)
            p[4] = UInt8(timestamp >> 24); p[5] = UInt8(timestamp >> 16 & 0xFF); p[6] = UInt8(timestamp >> 8 & 0xFF); p[7] = UInt8(timestamp & 0xFF)
            p[8] = UInt8(ssrc >> 24); p[9] = UInt8(ssrc >> 16 & 0xFF); p[10] = UInt8(ssrc >> 8 & 0xFF); p[11] = UInt8(ssrc & 0xFF)
            p.append(contentsOf: bytes[start..<end])
            out.append(RTPPacketizer.Datagram(track: 0, bytes: p, isRTCP: false))
            sequence &+= 1
            start = end
        }
        return out
    }
}

@available(*, unavailable)
extension MPEGTSPacketizer: Sendable {}
