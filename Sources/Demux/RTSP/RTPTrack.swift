import MediaCore
import Wire

/// One access unit (a whole picture) or audio frame, taken out of RTP.
struct RTPFrame {
    var data: [UInt8]
    var timestamp: UInt32
    var isKey: Bool
    /// When the RTP packet that completed it arrived.
    var arrivalNanos: UInt64
    /// RTP packets lost since the frame before.
    var lostBefore: Int
}

/// How a track's payload is carried (RFC 6184, RFC 7798, RFC 3640, RFC 3551).
enum RTPDepayloadFormat: Equatable {
    case h264
    /// `donl`: every aggregation and fragmentation unit carries a decoding order number
    /// (`sprop-max-don-diff` above 0), skipped as FFmpeg's depacketizer does.
    case h265(donl: Bool)
    case aac(sizeLength: Int, indexLength: Int, indexDeltaLength: Int)
    case g711
    /// RFC 7587: one Opus packet per RTP packet (WebRTC).
    case opus
}

/// One RTP track of an RTSP session: puts its packets back in sequence order (within a bounded
/// wait, over UDP), counts the lost ones, and rebuilds frames from the payload. A picture is
/// handed on when the packet with the marker bit (its last) arrives, not when the next picture
/// starts: this is what saves a frame interval over FFmpeg's RTSP demuxer, whose H.264 parser
/// finds the end of a picture only at the start of the next.
final class RTPTrack {
    let streamIndex: Int
    let format: RTPDepayloadFormat
    let payloadType: Int
    let clockRate: Int
    /// Packets held to put reordered ones back (0: hand each on as it arrives).
    let queueSize: Int
    /// The longest a gap holds later packets.
    let maxDelayNanos: UInt64

    /// Frames finished, in order, for the source to take.
    var frames: [RTPFrame] = []
    /// RTP packets lost (never came, or came too late to be put back), over the session.
    private(set) var totalLost = 0
    /// The sender's wall clock at an RTP timestamp, from its last sender report.
    private(set) var senderReport: (wallMicros: Int64, timestamp: UInt32)?
    /// The sender said goodbye (RTCP BYE).
    private(set) var saidBye = false
    /// Parameter sets the stream carried in band (a WHIP publisher's, a camera's without sprop).
    private(set) var inBand: ParameterSets

    /// Packets taken (of this track's payload type), for link health.
    private(set) var received = 0
    /// Packets that came after a later one.
    private(set) var reordered = 0
    /// RFC 3550's interarrival jitter, in timestamp units.
    private(set) var jitterUnits = 0.0
    private var highest: UInt16?
    private var lastTransit: (timestamp: UInt32, arrival: UInt64)?

    private var expected: UInt16?
    private var held: [(seq: UInt16, packet: [UInt8], arrival: UInt64)] = []
    private var pendingLost = 0

    // H.264 and H.265: the access unit being assembled.
    private var au: [UInt8] = []
    private var auTimestamp: UInt32 = 0
    private var auKey = false
    /// The unit has a picture's slice (not only parameter sets, SEI or a delimiter).
    private var auHasSlice = false
    private var auArrival: UInt64 = 0
    private var inFragment = false
    // AAC: an access unit split over packets.
    private var fragment: [UInt8] = []
    private var fragmentTimestamp: UInt32 = 0

    init(streamIndex: Int, format: RTPDepayloadFormat, payloadType: Int, clockRate: Int, queueSize: Int, maxDelay: Double) {
        self.streamIndex = streamIndex
        self.format = format
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.queueSize = queueSize
        self.maxDelayNanos = PeerNumber.nanoseconds(maxDelay)
        if case .h265 = format { inBand = ParameterSets(syntax: .h265) } else { inBand = ParameterSets(syntax: .h264) }
    }

    // MARK: - Sequence order

    /// Takes one RTP packet as received.
    func receive(_ packet: UnsafeRawBufferPointer, arrival: UInt64) {
        let b = packet.bindMemory(to: UInt8.self)
        guard b.count >= 12, b[0] >> 6 == 2, Int(b[1] & 0x7F) == payloadType else { return }
        let seq = UInt16(b[2]) << 8 | UInt16(b[3])
        measure(seq: seq, timestamp: UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7]), arrival: arrival)
        guard queueSize > 0, let exp = expected else {
            // In arrival order: hand on at once; a gap is counted as lost.
            if let exp = expected {
                let d = Int16(bitPattern: seq &- exp)
                if d > 0 { pendingLost += Int(d); totalLost += Int(d) }
                if d >= 0 { expected = seq &+ 1 }
            } else {
                expected = seq &+ 1
            }
            parse(b, arrival: arrival)
            return
        }
        let d = Int16(bitPattern: seq &- exp)
        if d == 0 {
            parse(b, arrival: arrival)
            expected = seq &+ 1
            drain()
        } else if d < 0 {
            if d < -1000 { restart(at: seq, b, arrival: arrival) } // the sender started again
            else { pendingLost += 1; totalLost += 1 } // too late: its place was given up
        } else if d > 1000 {
            restart(at: seq, b, arrival: arrival)
        } else {
            let at = held.firstIndex { Int16(bitPattern: $0.seq &- seq) >= 0 } ?? held.endIndex
            if at < held.endIndex && held[at].seq == seq { return } // a duplicate
            held.insert((seq, Array(b), arrival), at: at)
            if held.count > queueSize { releaseFirst() }
        }
    }

    /// Counts the packet, notes reorder, and updates the jitter (RFC 3550 A.8: the difference
    /// between two packets' spacing on arrival and in timestamps, smoothed by 1/16).
    private func measure(seq: UInt16, timestamp: UInt32, arrival: UInt64) {
        received += 1
        if let h = highest, Int16(bitPattern: seq &- h) < 0 { reordered += 1 } else { highest = seq }
        if clockRate > 0, let last = lastTransit, arrival >= last.arrival {
            let spacing = Double(arrival - last.arrival) / 1e9 * Double(clockRate)
            let d = abs(spacing - Double(Int32(bitPattern: timestamp &- last.timestamp)))
            // A jump of over ten seconds is the sender starting again, not jitter.
            if d.isFinite && d < Double(clockRate) * 10 { jitterUnits += (d - jitterUnits) / 16 }
        }
        lastTransit = (timestamp, arrival)
    }

    /// The track's jitter in seconds.
    var jitterSeconds: Double { clockRate > 0 ? jitterUnits / Double(clockRate) : 0 }

    /// When the first held packet must be given up waiting for the gap before it (nil: none held).
    var nextRelease: UInt64? { held.first.map { $0.arrival &+ maxDelayNanos } }

    /// Gives up waiting for gaps that have been open longer than the reorder wait.
    func releaseDue(now: UInt64) {
        while let h = held.first, now >= h.arrival &+ maxDelayNanos { releaseFirst() }
    }

    private func restart(at seq: UInt16, _ b: UnsafeBufferPointer<UInt8>, arrival: UInt64) {
        while !held.isEmpty { releaseFirst() }
        parse(b, arrival: arrival)
        expected = seq &+ 1
    }

    private func releaseFirst() {
        let h = held.removeFirst()
        if let exp = expected {
            let gap = Int(h.seq &- exp)
            pendingLost += gap
            totalLost += gap
        }
        h.packet.withUnsafeBufferPointer { parse($0, arrival: h.arrival) }
        expected = h.seq &+ 1
        drain()
    }

    private func drain() {
        while let h = held.first, h.seq == expected {
            held.removeFirst()
            h.packet.withUnsafeBufferPointer { parse($0, arrival: h.arrival) }
            expected = h.seq &+ 1
        }
    }

    // MARK: - Payload

    private func parse(_ b: UnsafeBufferPointer<UInt8>, arrival: UInt64) {
        let marker = b[1] & 0x80 != 0
        let ts = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
        var start = 12 + 4 * Int(b[0] & 0x0F)
        var end = b.count
        if b[0] & 0x10 != 0 { // header extension
            guard start + 4 <= end else { return }
            start += 4 + 4 * (Int(b[start + 2]) << 8 | Int(b[start + 3]))
        }
        if b[0] & 0x20 != 0 { end -= Int(b[end - 1]) } // padding
        guard start <= end else { return }
        let payload = UnsafeBufferPointer(rebasing: b[start..<end])
        switch format {
        case .h264: h264(payload, ts: ts, marker: marker, arrival: arrival)
        case .h265(let donl): h265(payload, ts: ts, marker: marker, arrival: arrival, donl: donl)
        case .aac(let s, let i, let d): aac(payload, ts: ts, marker: marker, arrival: arrival, sizeLength: s, indexLength: i, indexDeltaLength: d)
        case .g711, .opus:
            guard !payload.isEmpty else { return }
            emit(Array(payload), ts: ts, key: true, arrival: arrival)
        }
    }

    private func emit(_ data: [UInt8], ts: UInt32, key: Bool, arrival: UInt64) {
        frames.append(RTPFrame(data: data, timestamp: ts, isKey: key, arrivalNanos: arrival, lostBefore: pendingLost))
        pendingLost = 0
    }

    private static let startCode: [UInt8] = [0, 0, 0, 1]
    /// The largest access unit taken (a sender that never ends one cannot fill memory).
    static let maxAccessUnit = 32 << 20

    /// RFC 6184, non-interleaved mode: single NAL units, STAP-A and FU-A. The access unit ends
    /// at the marker bit (or, if a sender never sets it, when the timestamp changes).
    private func h264(_ p: UnsafeBufferPointer<UInt8>, ts: UInt32, marker: Bool, arrival: UInt64) {
        if !au.isEmpty && ts != auTimestamp { finishAU() }
        auTimestamp = ts
        auArrival = arrival
        guard let first = p.first else { if marker { finishAU() }; return }
        let type = first & 0x1F
        switch type {
        case 1...23:
            appendNAL(p)
        case 24: // STAP-A: 16-bit sizes, each followed by a NAL unit
            var i = 1
            while i + 2 <= p.count {
                let size = Int(p[i]) << 8 | Int(p[i + 1])
                i += 2
                guard size > 0, i + size <= p.count else { break }
                appendNAL(UnsafeBufferPointer(rebasing: p[i..<(i + size)]))
                i += size
            }
        case 28: // FU-A
            guard p.count > 2 else { break }
            let header = p[1]
            if header & 0x80 != 0 {
                let nal = (first & 0xE0) | (header & 0x1F)
                au.append(contentsOf: Self.startCode)
                au.append(nal)
                au.append(contentsOf: UnsafeBufferPointer(rebasing: p[2...]))
                noteNAL(nal, UnsafeBufferPointer(rebasing: p[2...]), fragment: true)
                inFragment = header & 0x40 == 0
            } else if inFragment {
                au.append(contentsOf: UnsafeBufferPointer(rebasing: p[2...]))
                if header & 0x40 != 0 { inFragment = false }
            }
            // A middle or end with no start: its start was lost; the unit is left out.
        default:
            break // STAP-B, MTAP, FU-B: interleaved mode, which LiveRelay does not ask for
        }
        endPacket(marker: marker)
    }

    /// After a packet of a video access unit: the marker bit ends it; one grown past the
    /// largest taken is dropped.
    private func endPacket(marker: Bool) {
        if marker { finishAU() }
        if au.count > Self.maxAccessUnit {
            au = []
            auKey = false
            auHasSlice = false
            inFragment = false
        }
    }

    /// RFC 7798: single NAL units, aggregation packets (48) and fragmentation units (49), each
    /// after the two-byte payload header; with `donl`, the decoding order numbers (two bytes
    /// before the first unit, one before each next in an AP) are skipped. PACI (50) is left out.
    private func h265(_ p: UnsafeBufferPointer<UInt8>, ts: UInt32, marker: Bool, arrival: UInt64, donl: Bool) {
        if !au.isEmpty && ts != auTimestamp { finishAU() }
        auTimestamp = ts
        auArrival = arrival
        guard p.count >= 2 else { if marker { finishAU() }; return }
        switch H265.type(p[0]) {
        case 0..<H265.NALType.aggregation:
            appendNAL(p)
        case H265.NALType.aggregation:
            var i = donl ? 4 : 2
            var first = true
            while true {
                if donl && !first { i += 1 } // DOND
                first = false
                guard i + 2 <= p.count else { break }
                let size = Int(p[i]) << 8 | Int(p[i + 1])
                i += 2
                guard size >= 2, i + size <= p.count else { break }
                appendNAL(UnsafeBufferPointer(rebasing: p[i..<(i + size)]))
                i += size
            }
        case H265.NALType.fragmentation:
            let body = donl ? 5 : 3
            guard p.count > body else { break }
            let header = p[2]
            if header & 0x80 != 0 {
                let nal0 = (p[0] & 0x81) | (header & 0x3F) << 1
                au.append(contentsOf: Self.startCode)
                au.append(nal0)
                au.append(p[1])
                au.append(contentsOf: UnsafeBufferPointer(rebasing: p[body...]))
                noteNAL(nal0, UnsafeBufferPointer(rebasing: p[body...]), fragment: true)
                inFragment = header & 0x40 == 0
            } else if inFragment {
                au.append(contentsOf: UnsafeBufferPointer(rebasing: p[body...]))
                if header & 0x40 != 0 { inFragment = false }
            }
        default:
            break
        }
        endPacket(marker: marker)
    }

    private func appendNAL(_ nal: UnsafeBufferPointer<UInt8>) {
        inFragment = false
        au.append(contentsOf: Self.startCode)
        au.append(contentsOf: nal)
        noteNAL(nal[0], UnsafeBufferPointer(rebasing: nal[1...]), fragment: false)
    }

    /// Notes what a NAL unit makes of its access unit (a slice, a keyframe) and keeps a whole
    /// parameter set. `rest`: the bytes after its first (H.265: the second header byte, then the payload).
    private func noteNAL(_ header: UInt8, _ rest: UnsafeBufferPointer<UInt8>, fragment: Bool) {
        if case .h265 = format {
            let type = H265.type(header)
            if H265.isSlice(type) {
                auHasSlice = true
                if H265.isRandomAccess(type) { auKey = true }
            } else if type == H265.NALType.prefixSEI, rest.count > 1, H264.hasRecoveryPoint(sei: rest.dropFirst()) {
                auKey = true
            } else if !fragment, (H265.NALType.vps...H265.NALType.pps).contains(type) {
                inBand.note([header] + Array(rest))
            }
            return
        }
        switch header & 0x1F {
        case 1: auHasSlice = true
        case 5: auKey = true; auHasSlice = true
        // A recovery point: where a camera using periodic intra refresh (no IDR after the
        // first) can be joined; FFmpeg's parser counts it as a keyframe too.
        case H264.NALType.sei where H264.hasRecoveryPoint(sei: rest): auKey = true
        case 7 where !fragment, 8 where !fragment: inBand.note([header] + Array(rest))
        default: break
        }
    }

    /// Hands the access unit on. One with no slice (parameter sets a server sent on their own,
    /// as gst-rtsp-server does when a viewer joins) is kept and put in front of the next.
    private func finishAU() {
        inFragment = false
        guard !au.isEmpty, auHasSlice || au.count > 1 << 16 else { return }
        auHasSlice = false
        let size = au.count
        emit(au, ts: auTimestamp, key: auKey, arrival: auArrival)
        au = []
        au.reserveCapacity(size + size / 4)
        auKey = false
    }

    /// RFC 3640 (mpeg4-generic, AAC-hbr and the like): AU headers, then the access units; one
    /// unit may span packets up to the marker bit.
    private func aac(_ p: UnsafeBufferPointer<UInt8>, ts: UInt32, marker: Bool, arrival: UInt64, sizeLength: Int, indexLength: Int, indexDeltaLength: Int) {
        guard p.count >= 2, sizeLength > 0 else { return }
        let headerBits = Int(p[0]) << 8 | Int(p[1])
        let headerBytes = (headerBits + 7) / 8
        guard 2 + headerBytes <= p.count else { return }
        var bits = BitReader(UnsafeBufferPointer(rebasing: p[2..<(2 + headerBytes)]))
        var sizes: [Int] = []
        var used = 0
        while used + sizeLength <= headerBits {
            let size = bits.read(sizeLength)
            let indexBits = sizes.isEmpty ? indexLength : indexDeltaLength
            _ = bits.read(indexBits)
            used += sizeLength + indexBits
            sizes.append(size)
        }
        let data = UnsafeBufferPointer(rebasing: p[(2 + headerBytes)...])
        if sizes.count == 1 && (sizes[0] > data.count || !fragment.isEmpty) {
            if fragment.isEmpty || fragmentTimestamp != ts { fragment = []; fragmentTimestamp = ts }
            fragment.append(contentsOf: data)
            if fragment.count >= sizes[0] || marker {
                if fragment.count >= sizes[0] { emit(Array(fragment[0..<sizes[0]]), ts: ts, key: true, arrival: arrival) }
                fragment = []
            }
            return
        }
        var offset = 0
        for (i, size) in sizes.enumerated() {
            guard size > 0, offset + size <= data.count else { break }
            emit(Array(UnsafeBufferPointer(rebasing: data[offset..<(offset + size)])), ts: ts &+ UInt32(truncatingIfNeeded: i * 1024), key: true, arrival: arrival)
            offset += size
        }
    }

    // MARK: - RTCP

    /// Takes an RTCP compound packet: sender reports (the sender's clock) and BYE.
    func receiveControl(_ packet: UnsafeRawBufferPointer) {
        for message in RTCPMessage.parse(packet.bindMemory(to: UInt8.self)) {
            switch message {
            case .senderReport(_, let micros, let rtpTime): senderReport = (micros, rtpTime)
            case .bye: saidBye = true
            default: break
            }
        }
    }
}

/// Reads big-endian bit fields.
struct BitReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The next `n` bits (0 past the end).
    mutating func read(_ n: Int) -> Int {
        var v = 0
        for _ in 0..<n {
            let byte = position / 8
            let bit = byte < bytes.count ? (Int(bytes[byte]) >> (7 - position % 8)) & 1 : 0
            v = v << 1 | bit
            position += 1
        }
        return v
    }
}
