internal import CFFmpeg
public import MediaCore
import Wire

/// What an RTSP session sends: RTP packets of a stream's packets, and the description of its tracks.
public protocol RTPPacketizing: AnyObject {
    var tracks: [RTPPacketizer.Track] { get }
    /// The session description (`application/sdp`).
    var sdp: String { get }
    /// Tracks of the source left out, and why.
    var skipped: [String] { get }
    /// One packet's RTP packets (and any RTCP before them), timestamps in microseconds.
    func packetize(_ packet: Packet, pts: Int64?, dts: Int64?) throws(FFmpegError) -> [RTPPacketizer.Datagram]
}

/// Cuts packets into RTP with FFmpeg's own packetizers (the `rtp` muxer: H.264 FU-A, HEVC,
/// AAC, Opus, G.711 …) and describes them (FFmpeg's `av_sdp_create` says each codec's rtpmap
/// and fmtp; Wire's `SessionDescription` reads that once and writes the text), for an RTSP
/// server's session layer to send. One muxer per track (the `rtp` muxer carries one
/// stream), each writing into memory: every RTP or RTCP packet it flushes is handed out at once,
/// nothing is held. Timestamps come in microseconds, already made continuous by the caller.
/// Confined to one thread.
public final class RTPPacketizer: RTPPacketizing {
    /// One RTP packet (or RTCP sender report) of one track.
    public struct Datagram: Sendable {
        public let track: Int
        public let bytes: [UInt8]
        public let isRTCP: Bool
    }

    /// A track of the session: which source stream, and its control URL suffix in the SDP.
    public struct Track: Sendable {
        /// The source stream; -1 for an MPEG-TS track, which carries them all.
        public let sourceIndex: Int
        public let mediaType: MediaType
        public let codecName: String
        /// `streamid=N`: what SETUP names, after the content base.
        public let control: String
    }

    public private(set) var tracks: [Track] = []
    /// The session description (`application/sdp`), one `m=` section per track.
    public private(set) var sdp = ""
    /// Tracks of the source left out: no RTP payload format for their codec in FFmpeg.
    public private(set) var skipped: [String] = []

    private var contexts: [UnsafeMutablePointer<AVFormatContext>] = []
    private var ios: [UnsafeMutablePointer<AVIOContext>?] = []
    private var sinks: [DatagramSink] = []
    private var trackOf: [Int: Int] = [:]
    private var timeBases: [AVRational] = []
    private let scratch: UnsafeMutablePointer<AVPacket>
    /// Per track: Annex B parameter sets to put in front of keyframes without them (a camera
    /// that sends them only in its SDP), so a client may start at any keyframe.
    private var parameterSets: [Int: (sets: [UInt8], hevc: Bool)] = [:]

    /// Collects what one track's muxer flushes: one datagram per flush.
    final class DatagramSink {
        var packets: [[UInt8]] = []
    }

    /// `maxPacketSize`: the largest RTP packet (headers included); 1400 leaves room for IP,
    /// UDP and a tunnel under a 1500-byte MTU.
    public init(streams: [StreamInfo], title: String, maxPacketSize: Int = 1400) throws(FFmpegError) {
        guard let pkt = av_packet_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_packet_alloc") }
        scratch = pkt
        // Every stored property is set: if open throws, deinit frees what it made.
        try open(streams: streams, title: title, maxPacketSize: maxPacketSize)
    }

    deinit {
        for (i, ctx) in contexts.enumerated() {
            ctx.pointee.pb = nil
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_free_context(c)
            c = nil
            if ios[i] != nil {
                av_freep(&ios[i]!.pointee.buffer)
                avio_context_free(&ios[i])
            }
        }
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    private func open(streams: [StreamInfo], title: String, maxPacketSize: Int) throws(FFmpegError) {
        for s in streams where s.mediaType == .video || s.mediaType == .audio {
            let track = contexts.count
            var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
            // The URL only tells av_sdp_create the address to write (a server's SDP says 0.0.0.0).
            try ffcheck(avformat_alloc_output_context2(&ctx, nil, "rtp", "rtp://0.0.0.0"), "avformat_alloc_output_context2")
            guard let ctx else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_alloc_output_context2") }
            let sink = DatagramSink()
            let size = Int32(maxPacketSize * 2)
            guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
                avformat_free_context(ctx)
                throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_malloc")
            }
            // Safety: `sink` is retained by self (sinks) and outlives the AVIOContext freed in deinit.
            var io = avio_alloc_context(buffer, size, 1, Unmanaged.passUnretained(sink).toOpaque(), nil, { opaque, buf, n in
                guard let opaque, let buf, n > 0 else { return n }
                Unmanaged<DatagramSink>.fromOpaque(opaque).takeUnretainedValue().packets.append(Array(UnsafeBufferPointer(start: buf, count: Int(n))))
                return n
            }, nil)
            guard io != nil else {
                av_free(buffer)
                avformat_free_context(ctx)
                throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avio_alloc_context")
            }
            io!.pointee.seekable = 0
            io!.pointee.max_packet_size = Int32(maxPacketSize)
            ctx.pointee.pb = io
            ctx.pointee.packet_size = UInt32(maxPacketSize)
            ctx.pointee.max_delay = 0
            guard let st = avformat_new_stream(ctx, nil) else {
                ctx.pointee.pb = nil
                avformat_free_context(ctx)
                av_freep(&io!.pointee.buffer)
                avio_context_free(&io)
                throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avformat_new_stream")
            }
            _ = s.parameters.withUnsafeAVCodecParameters { avcodec_parameters_copy(st.pointee.codecpar, $0) }
            st.pointee.codecpar.pointee.codec_tag = 0
            st.pointee.time_base = av_make_q(1, s.mediaType == .audio && s.parameters.sampleRate > 0 ? Int32(s.parameters.sampleRate) : 90000)
            var dict: OpaquePointer? = nil
            av_dict_set(&dict, "payload_type", String(96 + track), 0)
            let r = avformat_write_header(ctx, &dict)
            av_dict_free(&dict)
            guard r >= 0 else {
                // No payload format for this codec (or its setup is missing): the track is left out.
                skipped.append("\(s.mediaType.rawValue) \(s.codecName): \(FFmpegError.describe(r))")
                ctx.pointee.pb = nil
                avformat_free_context(ctx)
                av_freep(&io!.pointee.buffer)
                avio_context_free(&io)
                continue
            }
            contexts.append(ctx)
            ios.append(io)
            sinks.append(sink)
            sink.packets.removeAll()
            timeBases.append(st.pointee.time_base)
            trackOf[s.index] = track
            tracks.append(Track(sourceIndex: s.index, mediaType: s.mediaType, codecName: s.codecName, control: "streamid=\(track)"))
            if s.parameters.isH264 || s.parameters.isHEVC {
                let extra = s.parameters.extradata
                if H264.startsWithStartCode(extra) { parameterSets[track] = (extra, s.parameters.isHEVC) }
            }
        }
        guard !contexts.isEmpty else {
            throw FFmpegError(code: FFmpegError.invalidData, operation: "no track with an RTP payload format (\(skipped.joined(separator: "; ")))")
        }
        // No control character in the title: it is one line of the text read back below.
        let name = String(title.unicodeScalars.filter { $0.value >= 0x20 && $0 != "\u{7F}" })
        av_dict_set(&contexts[0].pointee.metadata, "title", name.isEmpty ? "LiveRelay" : name, 0)
        var text = [CChar](repeating: 0, count: 16384)
        let r = contexts.withUnsafeMutableBufferPointer { ctxs in
            ctxs.withMemoryRebound(to: Optional<UnsafeMutablePointer<AVFormatContext>>.self) { av_sdp_create($0.baseAddress, Int32($0.count), &text, Int32(text.count)) }
        }
        try ffcheck(r, "av_sdp_create")
        // av_sdp_create's text is read once and written by Wire's one SDP writer: FFmpeg's
        // rtpmap and fmtp per codec (parameter sets, AAC's config), LiveRelay's lines.
        let written = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard var session = SessionDescription(parsing: written, limits: .camera) else {
            throw FFmpegError(code: FFmpegError.invalidData, operation: "av_sdp_create wrote no session description")
        }
        // av_sdp_create writes a connection line at the session level for one track, in each
        // section for more; a section without one needs the session's (RTSP clients expect it).
        if session.connection == nil, session.media.contains(where: { $0.connection == nil }) {
            session.connection = "IN IP4 0.0.0.0"
        }
        sdp = session.text
    }

    /// The track carrying this source stream, if any.
    public func track(forStream index: Int) -> Int? { trackOf[index] }

    /// Packetizes one packet (timestamps in microseconds on a continuous timeline) and returns
    /// the RTP packets, with any RTCP sender report the muxer sent first, in order.
    public func packetize(_ packet: Packet, pts: Int64?, dts: Int64?) throws(FFmpegError) -> [Datagram] {
        guard let track = trackOf[packet.streamIndex] else { return [] }
        let ctx = contexts[track]
        defer { av_packet_unref(scratch) }
        try AnnexB.reference(packet, into: scratch, parameterSets: parameterSets[track])
        let us = av_make_q(1, 1_000_000), tb = timeBases[track]
        scratch.pointee.stream_index = 0
        scratch.pointee.pts = (pts ?? dts).map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.dts = (dts ?? pts).map { av_rescale_q($0, us, tb) } ?? lr_nopts_value()
        scratch.pointee.duration = 0
        scratch.pointee.pos = -1
        try ffcheck(av_write_frame(ctx, scratch), "av_write_frame")
        let sink = sinks[track]
        defer { sink.packets.removeAll(keepingCapacity: true) }
        // RTCP's packet types (RFC 5761: 192–223) sit where an RTP packet has its marker bit and
        // payload type; the dynamic types used here (96–127, 224–255 with the marker) never reach them.
        return sink.packets.map { Datagram(track: track, bytes: $0, isRTCP: RTCPMessage.isRTCP($0)) }
    }
}

@available(*, unavailable)
extension RTPPacketizer: Sendable {}
