import Foundation
import Logging
import MediaCore
import Mux
import Synchronization
import Wire

/// One talker's sound on its way to the stream's talk path: Opus RTP as the talker's WebRTC
/// session decrypted it, made the talk path's format by `TalkEncoder` (or passed on, to a path
/// that takes Opus) and cut into RTP with this side's SSRC, sequence and clock, on the thread
/// that received it (an event loop's: a 20 ms packet's decode and encode take microseconds, and
/// no talk path waits to send; a thread hop per packet cost more than the work). The path is
/// asked for at every packet: a camera that reconnected has a new backchannel, maybe in another
/// format.
public final class TalkSession: @unchecked Sendable {
    // Safety: `work` is touched only under `lock`; the counters are atomic.
    public let stream: String
    private let hub: StreamHub
    private let logger: Logger
    private let lock = NSLock()
    private let closed = Atomic<Bool>(false)
    let received = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    /// Packets with nowhere to go (no path now, or the path could not take them at once).
    let dropped = Atomic<Int>(0)
    /// Packets whose Opus did not decode (a talker's damaged or hostile packets).
    let undecodable = Atomic<Int>(0)

    private struct Work {
        var encoder: TalkEncoder?
        var target: ObjectIdentifier?
        var ssrc = UInt32.random(in: 1...UInt32.max)
        var sequence = UInt16.random(in: 0...UInt16.max)
        var timestamp = UInt32.random(in: 0...UInt32.max)
        /// The talker's last RTP timestamp (Opus passed on advances by the talker's own steps).
        var talkerTimestamp: UInt32?
    }
    private var work = Work()

    init(stream: String, hub: StreamHub, logger: Logger) {
        self.stream = stream
        self.hub = hub
        self.logger = logger
    }

    /// One RTP packet from the talker (Opus); called on the session's thread.
    public func receive(_ rtp: [UInt8]) {
        guard !closed.load(ordering: .relaxed), let p = RTPPacket(parsing: rtp), !p.payload.isEmpty else { return }
        received.add(1, ordering: .relaxed)
        lock.withLock { forward(p.payload, talkerTimestamp: p.timestamp) }
    }

    func close() { closed.store(true, ordering: .relaxed) }

    /// What the talk carried, for its log line and audit entry.
    public var summary: String {
        "\(received.load(ordering: .relaxed)) packets in, \(sent.load(ordering: .relaxed)) sent, \(dropped.load(ordering: .relaxed)) dropped, "
            + "\(undecodable.load(ordering: .relaxed)) undecodable"
    }

    private func forward(_ opus: ArraySlice<UInt8>, talkerTimestamp: UInt32) {
        // 48 kHz: a step of 2.5 to 120 ms is a packet's; anything else (a jump, a new talker
        // stream) counts as 20 ms.
        let step = work.talkerTimestamp.map { talkerTimestamp &- $0 }.flatMap { (120...5760).contains($0) ? Int($0) : nil } ?? 960
        work.talkerTimestamp = talkerTimestamp
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
            units = [(Array(opus), step)]
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
