import Foundation
import Logging
import MediaCore
import Mux
import Synchronization
import Wire

/// One talker's sound on its way to the stream's talk path: Opus RTP as the talker's WebRTC
/// session decrypted it, taken on a queue of its own (never the event loop's), made the talk
/// path's format by `TalkEncoder` (or passed on, to a path that takes Opus) and cut into RTP
/// with this side's SSRC, sequence and clock. The path is asked for at every packet: a camera
/// that reconnected has a new backchannel, maybe in another format.
public final class TalkSession: @unchecked Sendable {
    // Safety: `work` is touched only on `queue`; the counters are atomic.
    public let stream: String
    private let hub: StreamHub
    private let logger: Logger
    private let queue: DispatchQueue
    private let closed = Atomic<Bool>(false)
    private let backlog = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    /// Packets with nowhere to go (no path now, or the path refused them) or dropped while the
    /// path was slow (more than `maxBacklog` waiting).
    let dropped = Atomic<Int>(0)
    /// Packets whose Opus did not decode (a talker's damaged or hostile packets).
    let undecodable = Atomic<Int>(0)

    private struct Work {
        var encoder: TalkEncoder?
        var target: ObjectIdentifier?
        var ssrc = UInt32.random(in: 1...UInt32.max)
        var sequence = UInt16.random(in: 0...UInt16.max)
        var timestamp = UInt32.random(in: 0...UInt32.max)
    }
    private var work = Work()

    /// Packets waiting beyond this are dropped (0.5 s of 20 ms packets): a voice late is worse
    /// than a voice cut.
    static let maxBacklog = 25

    init(stream: String, hub: StreamHub, logger: Logger) {
        self.stream = stream
        self.hub = hub
        self.logger = logger
        queue = DispatchQueue(label: "talk:\(stream)", qos: .userInteractive)
    }

    /// One RTP packet from the talker (Opus); called on the session's thread.
    public func receive(_ rtp: [UInt8]) {
        guard !closed.load(ordering: .relaxed), let p = RTPPacket(parsing: rtp), !p.payload.isEmpty else { return }
        received.add(1, ordering: .relaxed)
        guard backlog.add(1, ordering: .relaxed).newValue <= Self.maxBacklog else {
            backlog.subtract(1, ordering: .relaxed)
            dropped.add(1, ordering: .relaxed)
            return
        }
        let payload = p.payload
        queue.async { [self] in
            backlog.subtract(1, ordering: .relaxed)
            forward(payload)
        }
    }

    func close() { closed.store(true, ordering: .relaxed) }

    /// What the talk carried, for its log line and audit entry.
    public var summary: String {
        "\(received.load(ordering: .relaxed)) packets in, \(sent.load(ordering: .relaxed)) sent, \(dropped.load(ordering: .relaxed)) dropped, "
            + "\(undecodable.load(ordering: .relaxed)) undecodable"
    }

    private func forward(_ opus: ArraySlice<UInt8>) {
        guard !closed.load(ordering: .relaxed), let target = hub.talkTarget else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        let format = target.talkFormat
        let id = ObjectIdentifier(target)
        if work.target != id {
            work.target = id
            work.encoder = nil
            if format.encoding != "OPUS" {
                do {
                    let e = try TalkEncoder(format: format)
                    if format.encoding == "MPEG4-GENERIC", Array(e.encoderConfig.prefix(2)) != Array(format.config.prefix(2)) {
                        logger.notice("talk: the AAC encoder's config differs from the camera's", metadata: [
                            "stream.name": "\(stream)", "camera": "\(format.config)", "encoder": "\(e.encoderConfig)"])
                    }
                    work.encoder = e
                } catch {
                    logger.error("talk: no encoder for the talk path", metadata: ["stream.name": "\(stream)", "format": "\(format)", "error": "\(error)"])
                }
            }
        }
        var units: [(payload: [UInt8], samples: Int)] = []
        if format.encoding == "OPUS" {
            units = [(Array(opus), 960)]
        } else if let e = work.encoder {
            let bad = e.undecodable
            let encoded = e.encode(opus: opus)
            if e.undecodable > bad { undecodable.add(e.undecodable - bad, ordering: .relaxed) }
            for u in encoded {
                if format.encoding == "MPEG4-GENERIC" {
                    if let p = RTPPacket.aacHBR(u) { units.append((p, e.samplesPerUnit)) }
                } else {
                    units.append((u, e.samplesPerUnit))
                }
            }
        } else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        for u in units {
            // G.711 and AAC: every packet ends its unit (RFC 3640 §3.2: the marker on an AU's last packet).
            let packet = RTPPacket(payloadType: format.payloadType, marker: format.encoding == "MPEG4-GENERIC", sequence: work.sequence,
                                   timestamp: work.timestamp, ssrc: work.ssrc, payload: u.payload[...])
            work.sequence &+= 1
            work.timestamp &+= UInt32(truncatingIfNeeded: u.samples)
            if target.sendTalk(packet.bytes) { sent.add(1, ordering: .relaxed) } else { dropped.add(1, ordering: .relaxed) }
        }
    }
}
