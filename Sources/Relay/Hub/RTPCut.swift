public import MediaCore
public import Mux

import Foundation
import Synchronization

/// One stream's RTP, cut once for all of its WebRTC viewers: FFmpeg's packetizer (and the Opus
/// transcoder for AAC audio) run once per packet of the stream, not once per viewer. Each
/// viewer keeps its own queue and policy (an `RTPFeed`): it takes a packet from its queue and
/// asks the cut for that packet's RTP, then writes its own SSRC, payload type and sequence
/// numbers (continuous across what it skipped) and protects it with its own keys. The same
/// cut in MPEG-TS (`joinMPEGTS`) gives a stream's SRT readers their messages of seven TS
/// packets, muxed once (a reader that skipped shows a continuity-counter gap, as after loss).
///
/// The cut reads the stream from a queue of its own, added to the hub before any of its
/// viewers' (the hub fills queues in the order they were added): when a viewer holds a packet,
/// the cut's queue has it too. The cut drains its queue, in the stream's order, only when a
/// viewer asks, and keeps the last `keep` packets' RTP for viewers further behind. A viewer that
/// asks for a packet the cut no longer has (its own policy kept it longer) is told it missed
/// it, and resumes at a keyframe.
public final class RTPCut: @unchecked Sendable {
    // Safety: the packetizer, transcoders, timeline and ring are used only under `lock`;
    // `members` only under the registry's lock; everything else is immutable.

    /// A packet's RTP, for every viewer.
    public struct Piece: Sendable {
        public let datagrams: [RTPPacketizer.Datagram]
        /// When the packet's picture or sound was captured, in microseconds since the Unix
        /// epoch: the sender's clock where the source says it (RTCP sender reports), else the
        /// packet's arrival. What a viewer's sender reports put on the NTP clock.
        public let captureWallMicros: Int64
    }

    public enum Lookup: Sendable {
        case piece(Piece)
        /// The cut no longer has this packet (or never had it): resume at a keyframe.
        case missed
        /// The source came back with other tracks: viewers describe again.
        case ended
    }

    /// Packets whose RTP is kept for viewers behind the newest (some seconds of a stream).
    public static let keep = 512

    public let hub: StreamHub
    public let description: RTSPDescription
    /// The source tracks the cut carries (`RTPFeed.layout`).
    public let layout: [String]
    private let key: String
    private let queueName: String
    private let queue: SinkQueue<RelayPacket>
    private let lock = NSLock()
    private let packetizer: any RTPPacketizing
    private let timeline = PacketTimeline()
    private var ring: [(packet: Packet, piece: Piece)?] = Array(repeating: nil, count: RTPCut.keep)
    private var next = 0
    private var index: [ObjectIdentifier: Int] = [:]
    private var ended = false
    /// The last epoch a viewer's packet came from whose tracks are the cut's (checked once per epoch).
    private var matchedEpoch: IngestEpoch?
    private var members = 0
    /// Packets cut, and packets the cut could not (counted, never thrown).
    private let cut = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)

    private static let registry = Mutex<[String: RTPCut]>([:])

    /// The shared cut of `hub` for this shape of RTP (made for the first viewer); the caller
    /// leaves it when its viewer ends. Nil before the stream's first connection.
    public static func join(hub: StreamHub, maxPacketSize: Int, audioToOpus: Bool) throws(FFmpegError) -> RTPCut? {
        try join(hub: hub, shape: "\(maxPacketSize):\(audioToOpus)", format: .perTrack) { epoch throws(FFmpegError) in
            try WebRTCPacketizer(streams: epoch.streams, title: hub.title ?? hub.name, maxPacketSize: maxPacketSize, audioToOpus: audioToOpus)
        }
    }

    /// The shared cut of `hub` in MPEG-TS, seven TS packets (1316 bytes) a datagram and nothing
    /// around them: what SRT readers are sent. Nil before the stream's first connection.
    public static func joinMPEGTS(hub: StreamHub) throws(FFmpegError) -> RTPCut? {
        try join(hub: hub, shape: "mpegts", format: .mpegTS) { epoch throws(FFmpegError) in
            try MPEGTSPacketizer(streams: epoch.streams, title: hub.name, framing: .raw)
        }
    }

    private static func join(hub: StreamHub, shape: String, format: RTPPayloadFormat,
                             make: (IngestEpoch) throws(FFmpegError) -> any RTPPacketizing) throws(FFmpegError) -> RTPCut? {
        guard let epoch = hub.latestEpoch else { return nil }
        let key = "\(ObjectIdentifier(hub).hashValue):\(shape)"
        let layout = RTPFeed.layout(epoch)
        let result: Result<RTPCut?, FFmpegError> = registry.withLock { r in
            if let c = r[key], c.layout == layout, !c.isEnded {
                c.members += 1
                return .success(c)
            }
            do throws(FFmpegError) {
                let c = try RTPCut(hub: hub, layout: layout, key: key, format: format, packetizer: make(epoch))
                if let old = r[key] { old.retire() }
                c.members = 1
                r[key] = c
                return .success(c)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A viewer of the cut ended; the last one takes the cut's queue off the stream.
    public func leave() {
        let last = Self.registry.withLock { r -> Bool in
            members -= 1
            guard members <= 0 else { return false }
            if r[key] === self { r[key] = nil }
            return true
        }
        if last { retire() }
    }

    private func retire() { hub.removeOutput(queueName) }

    private init(hub: StreamHub, layout: [String], key: String, format: RTPPayloadFormat, packetizer p: any RTPPacketizing) {
        self.hub = hub
        self.key = key
        packetizer = p
        self.layout = layout
        description = RTSPDescription(format: format, sdp: p.sdp, tracks: p.tracks, skipped: p.skipped)
        queueName = "rtp-cut-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        // Every packet of a few seconds: drained as fast as the quickest viewer takes them.
        queue = hub.addPacketQueue(queueName, policy: SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 4000)), notify: {})
    }

    var isEnded: Bool { lock.withLock { ended } }

    /// Packets cut so far, and those that could not be.
    public var counts: (cut: Int, failed: Int) { (cut.load(ordering: .relaxed), failed.load(ordering: .relaxed)) }

    /// The RTP of `item`, a packet a viewer took from its own queue; `.ended` when it comes from
    /// a connection with other tracks than the cut's.
    public func lookup(_ item: RelayPacket) -> Lookup {
        lock.lock()
        defer { lock.unlock() }
        if item.epoch !== matchedEpoch {
            guard RTPFeed.layout(item.epoch) == layout else { return .ended }
            matchedEpoch = item.epoch
        }
        if let i = index[ObjectIdentifier(item.packet)], let held = ring[i] { return .piece(held.piece) }
        guard !ended else { return .ended }
        while let taken = queue.pop(timeout: 0) {
            // A packet the timeline skips is kept as no RTP: every viewer skips it alike.
            let piece = cutOne(taken) ?? Piece(datagrams: [], captureWallMicros: 0)
            if ended { return .ended }
            store(taken.packet, piece)
            if taken.packet === item.packet { return .piece(piece) }
            // Past it: the cut's own queue dropped it (a viewer kept it longer).
            if taken.arrivalNanos > item.arrivalNanos { break }
        }
        return .missed
    }

    private func store(_ packet: Packet, _ piece: Piece) {
        if let old = ring[next] { index[ObjectIdentifier(old.packet)] = nil }
        ring[next] = (packet, piece)
        index[ObjectIdentifier(packet)] = next
        next = (next + 1) % Self.keep
    }

    /// One packet of the stream, in order, cut into RTP; nil when the timeline skips it. Sets
    /// `ended` when the source came back with other tracks.
    private func cutOne(_ item: RelayPacket) -> Piece? {
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return nil }
        if at.newEpoch && RTPFeed.layout(at.epoch) != layout {
            ended = true
            return nil
        }
        // Only WebRTC's sender reports use the capture time.
        let wall = description.format == .mpegTS ? 0 : at.packet.senderWallMicros ?? Self.wallMicros(atMonotonic: at.packet.arrivalNanos)
        do {
            let out = try packetizer.packetize(at.packet, pts: at.pts, dts: at.dts)
            cut.add(1, ordering: .relaxed)
            // Each viewer sends sender reports of its own (its counts, the capture time).
            return Piece(datagrams: out.filter { !$0.isRTCP }, captureWallMicros: wall)
        } catch {
            failed.add(1, ordering: .relaxed)
            timeline.restart()
            return nil
        }
    }

    /// The wall-clock time of a monotonic instant, in microseconds since the Unix epoch.
    static func wallMicros(atMonotonic nanos: UInt64) -> Int64 {
        let now = MonotonicClock.nanoseconds()
        let ago = now >= nanos ? Int64(clamping: (now - nanos) / 1000) : 0
        return Timestamps.subtract(Timestamps.int64(Date().timeIntervalSince1970 * 1e6), ago)
    }
}
