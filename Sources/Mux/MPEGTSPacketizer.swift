public import MediaCore
import Wire

/// Every track of a stream in one MPEG transport stream, carried in RTP (RFC 2250, static
/// payload type 33: `MP2T/90000`), for RTSP clients that take nothing else. The one that
/// matters: VLC built without live555 (Debian's and Ubuntu's packages), whose `rtsp://` handler
/// is its SAT>IP module: it sends SETUP on the URL itself, no DESCRIBE, and reads the RTP
/// payload as a transport stream.
///
/// The transport stream is HLS's (`FragmentMuxer`, FFmpeg's `mpegts` muxer into memory); this
/// type cuts it into RTP itself, because FFmpeg's `rtp_mpegts` holds the tail of every picture
/// until the next one fills a packet (a frame interval of delay). Here each media packet leaves
/// at once, in packets of at most seven TS packets. Timestamps come in microseconds, already
/// made continuous by the caller. Confined to one thread.
///
/// The same cut without RTP headers (`Framing.raw`) is what SRT readers and UDP forwards send:
/// seven TS packets (1316 bytes) a message, the tail of each media packet at once.
public final class MPEGTSPacketizer: RTPPacketizing {
    /// What each datagram is.
    public enum Framing: Sendable {
        /// RTP (RFC 2250) around at most seven TS packets.
        case rtp
        /// At most seven TS packets, nothing around them (MPEG-TS over UDP or SRT).
        case raw
    }

    public static let payloadType: UInt8 = 33
    private static let tsPacket = 188

    public let tracks: [RTPPacketizer.Track]
    public let sdp: String
    public let skipped: [String] = []

    private let muxer: FragmentMuxer
    private let framing: Framing
    private let payloadSize: Int
    private var sequence = UInt16.random(in: 0...UInt16.max)
    private let ssrc = UInt32.random(in: 1...UInt32.max)
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    private var lastTimestamp: Int64 = .min

    /// `maxPacketSize`: the largest datagram, RTP header included (seven TS packets fit 1400),
    /// never more than seven TS packets.
    public init(streams: [StreamInfo], title: String, maxPacketSize: Int = 1400, framing: Framing = .rtp) throws(FFmpegError) {
        muxer = try FragmentMuxer(format: .mpegts, streams: streams)
        self.framing = framing
        let header = framing == .rtp ? 12 : 0
        payloadSize = min(7, max(1, (maxPacketSize - header) / Self.tsPacket)) * Self.tsPacket
        tracks = [RTPPacketizer.Track(sourceIndex: -1, mediaType: .video, codecName: "mp2t", control: "streamid=0")]
        let name = title.isEmpty ? "LiveRelay" : String(title.unicodeScalars.filter { $0.value >= 0x20 && $0 != "\u{7F}" })
        var description = SessionDescription(sessionName: name)
        description.connection = "IN IP4 0.0.0.0"
        var media = SessionDescription.Media(kind: "video", port: 0, proto: "RTP/AVP",
                                             formats: [.init(payloadType: Int(Self.payloadType), codec: "mp2t", clockRate: 90000)])
        media.control = "streamid=0"
        description.media = [media]
        sdp = description.text
    }

    /// Muxes one packet and returns the RTP packets that carry it (and anything written before
    /// it: PAT, PMT), each ≤ seven TS packets, all stamped with the packet's decoding time.
    public func packetize(_ packet: Packet, pts: Int64?, dts: Int64?) throws(FFmpegError) -> [RTPPacketizer.Datagram] {
        guard muxer.carries(streamIndex: packet.streamIndex) else { return [] }
        try muxer.write(packet, pts: pts ?? dts, dts: dts ?? pts, duration: 0)
        // The RTP clock: the packet's decoding time at 90 kHz, never going back (audio and video
        // interleave a few milliseconds apart).
        let at = max(lastTimestamp, (dts ?? pts ?? 0) * 9 / 100)
        lastTimestamp = at
        let timestamp = timestampBase &+ UInt32(truncatingIfNeeded: at)
        if framing == .raw {
            return try muxer.drain { Self.chunks($0, size: payloadSize).map { RTPPacketizer.Datagram(track: 0, bytes: $0, isRTCP: false) } }
        }
        return try muxer.drain { Self.cut($0, payloadSize: payloadSize, sequence: &sequence, timestamp: timestamp, ssrc: ssrc) }
    }

    /// `bytes` in pieces of at most `size` bytes.
    static func chunks(_ bytes: UnsafeBufferPointer<UInt8>, size: Int) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: size).map { Array(UnsafeBufferPointer(rebasing: bytes[$0..<min(bytes.count, $0 + size)])) }
    }

    /// `bytes` (whole TS packets) in RTP packets of at most `payloadSize` bytes of payload.
    static func cut(_ bytes: UnsafeBufferPointer<UInt8>, payloadSize: Int, sequence: inout UInt16, timestamp: UInt32, ssrc: UInt32) -> [RTPPacketizer.Datagram] {
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
            p.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
            out.append(RTPPacketizer.Datagram(track: 0, bytes: p, isRTCP: false))
            sequence &+= 1
            start = end
        }
        return out
    }
}

@available(*, unavailable)
extension MPEGTSPacketizer: Sendable {}
