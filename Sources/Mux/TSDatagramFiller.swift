internal import CFFmpeg
import MediaCore

/// An AVIOContext in front of a datagram protocol's (FFmpeg's `udp`), through which the MPEG-TS
/// muxer writes: every datagram leaves with exactly `unit` bytes of TS. The muxer flushes at
/// the end of each packet, so that a picture's tail leaves at once, not with the next picture;
/// here that tail is filled out with null packets (PID 0x1FFF, which every demuxer skips), so
/// receivers that expect seven TS packets a datagram (IPTV gear, wall decoders) get them
/// without waiting a frame interval. An audio packet's tail may instead be held for the next
/// packet (`packetEnded(holdTail:)`), so that a stream's audio does not cost a datagram of
/// filling each. The muxer writes into memory (`MemoryIO`); each packet's bytes go on to the
/// `udp` AVIO as it ends. Owned by its publisher, confined to its thread.
final class TSDatagramFiller {
    static let tsPacket = 188
    /// A null packet (ISO 13818-1 §2.4.3.3: PID 0x1FFF, payload only, its bytes ignored).
    static let nullPacket: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)

    /// Where the muxer writes (the publisher's `pb`): memory, sent on after each packet.
    private let memory: MemoryIO
    /// The `udp` AVIO the datagrams go to (the publisher closes it).
    let inner: UnsafeMutablePointer<AVIOContext>
    private let unit: Int
    /// What waits for a whole datagram (an audio packet's tail).
    private var pending: [UInt8] = []

    var context: UnsafeMutablePointer<AVIOContext> { memory.context }

    /// A filler in front of `inner` (an opened `udp` AVIO); nil when its datagrams cannot hold
    /// a whole TS packet (a `pkt_size=` under 188).
    init?(inner: UnsafeMutablePointer<AVIOContext>) throws(FFmpegError) {
        unit = Int(inner.pointee.max_packet_size) / Self.tsPacket * Self.tsPacket
        guard unit > 0 else { return nil }
        self.inner = inner
        memory = try MemoryIO(bufferSize: Int32(unit))
    }

    /// A packet was written: its whole datagrams are sent, and its tail, short of a datagram,
    /// is filled out with null packets and sent too, or with `holdTail` kept for the next
    /// packet's datagram.
    func packetEnded(holdTail: Bool) {
        memory.flush()
        pending += memory.sink.bytes
        memory.sink.bytes.removeAll(keepingCapacity: true)
        var start = 0
        while pending.count - start >= unit {
            pending.withUnsafeBufferPointer { avio_write(inner, $0.baseAddress! + start, Int32(unit)) }
            start += unit
        }
        pending.removeFirst(start)
        if !holdTail && !pending.isEmpty {
            if pending.count % Self.tsPacket == 0 {
                for _ in 0..<((unit - pending.count) / Self.tsPacket) { pending += Self.nullPacket }
            }
            pending.withUnsafeBufferPointer { avio_write(inner, $0.baseAddress, Int32($0.count)) }
            pending.removeAll(keepingCapacity: true)
        }
        avio_flush(inner)
    }

    /// Sends what the filler holds (filled out).
    func flush() { packetEnded(holdTail: false) }
}

@available(*, unavailable)
extension TSDatagramFiller: Sendable {}
