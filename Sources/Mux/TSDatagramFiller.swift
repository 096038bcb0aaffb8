internal import CFFmpeg
import MediaCore

/// An AVIOContext in front of a datagram protocol's (FFmpeg's `udp`), through which the MPEG-TS
/// muxer writes: every datagram leaves with exactly `unit` bytes of TS. The muxer flushes at
/// the end of each packet, so that a picture's tail leaves at once, not with the next picture;
/// here that tail is filled out with null packets (PID 0x1FFF, which every demuxer skips), so
/// receivers that expect seven TS packets a datagram (IPTV gear, wall decoders) get them
/// without waiting a frame interval. An audio packet's tail may instead be held for the next
/// packet (`packetEnded(holdTail:)`), so that a stream's audio does not cost a datagram of
/// filling each. Owned by its publisher, confined to its thread.
final class TSDatagramFiller {
    /// Where the filled datagrams go, and what waits for a whole datagram.
    final class Target {
        let inner: UnsafeMutablePointer<AVIOContext>
        let unit: Int
        var pending: [UInt8] = []
        init(inner: UnsafeMutablePointer<AVIOContext>, unit: Int) {
            self.inner = inner
            self.unit = unit
        }

        /// Sends every whole datagram `pending` holds.
        func sendWhole() {
            var start = 0
            while pending.count - start >= unit {
                pending.withUnsafeBufferPointer { avio_write(inner, $0.baseAddress! + start, Int32(unit)) }
                start += unit
            }
            if start > 0 {
                pending.removeFirst(start)
                avio_flush(inner)
            }
        }
    }

    static let tsPacket = 188
    /// A null packet (ISO 13818-1 §2.4.3.3: PID 0x1FFF, payload only, its bytes ignored).
    static let nullPacket: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)

    let target: Target
    private(set) var context: UnsafeMutablePointer<AVIOContext>

    /// A filler in front of `inner` (an opened `udp` AVIO); nil when its datagrams cannot hold
    /// a whole TS packet (a `pkt_size=` under 188).
    init?(inner: UnsafeMutablePointer<AVIOContext>) throws(FFmpegError) {
        let unit = Int(inner.pointee.max_packet_size) / Self.tsPacket * Self.tsPacket
        guard unit > 0 else { return nil }
        target = Target(inner: inner, unit: unit)
        guard let buffer = av_malloc(unit)?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_malloc")
        }
        // Safety: `target` is retained by self and outlives the AVIOContext freed in deinit.
        guard let io = avio_alloc_context(buffer, Int32(unit), 1, Unmanaged.passUnretained(target).toOpaque(), nil, { opaque, buf, n in
            guard let opaque, let buf, n > 0 else { return n }
            let t = Unmanaged<Target>.fromOpaque(opaque).takeUnretainedValue()
            t.pending.append(contentsOf: UnsafeBufferPointer(start: buf, count: Int(n)))
            t.sendWhole()
            return t.inner.pointee.error < 0 ? t.inner.pointee.error : n
        }, nil) else {
            av_free(buffer)
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avio_alloc_context")
        }
        io.pointee.seekable = 0
        context = io
    }

    deinit {
        av_freep(&context.pointee.buffer)
        var io: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&io)
    }

    /// A packet was written (the muxer flushed): its tail, short of a datagram, is filled out
    /// with null packets and sent, or with `holdTail` kept for the next packet's datagram.
    func packetEnded(holdTail: Bool) {
        avio_flush(context)
        let t = target
        guard !holdTail, !t.pending.isEmpty else { return }
        if t.pending.count % Self.tsPacket == 0 {
            for _ in 0..<((t.unit - t.pending.count % t.unit) % t.unit / Self.tsPacket) { t.pending += Self.nullPacket }
        }
        t.pending.withUnsafeBufferPointer { avio_write(t.inner, $0.baseAddress, Int32($0.count)) }
        t.pending.removeAll(keepingCapacity: true)
        avio_flush(t.inner)
    }

    /// Sends what the filler holds (filled out).
    func flush() { packetEnded(holdTail: false) }
}

@available(*, unavailable)
extension TSDatagramFiller: Sendable {}
