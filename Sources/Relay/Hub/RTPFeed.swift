public import MediaCore
public import Mux

import Synchronization

/// How a session carries the stream.
public enum RTPPayloadFormat: Sendable {
    /// A track per source stream in its own RTP payload format (RFC 6184 H.264, RFC 3640 AAC …).
    case perTrack
    /// Every stream in one MPEG transport stream (RFC 2250, payload type 33): for clients that
    /// SETUP without a DESCRIBE (VLC without live555, SAT>IP style).
    case mpegTS
}

/// What an RTSP client is told before it plays: the session description and its tracks.
public struct RTSPDescription: Sendable {
    public let format: RTPPayloadFormat
    public let sdp: String
    public let tracks: [RTPPacketizer.Track]
    /// Tracks of the source left out (no RTP payload format for their codec).
    public let skipped: [String]
}

/// One RTSP client's copy of a stream, cut into RTP by FFmpeg's packetizers: an output like any
/// other (kind `rtsp`, listed by the API, drops counted) with its own bounded queue and policy,
/// so a client that falls behind skips to the next keyframe and never slows the stream or
/// another client. Timestamps run on one continuous timeline across source reconnects; a
/// reconnect that changes the tracks ends the session (the client describes again).
public final class RTPFeed: PacketOutput, @unchecked Sendable {
    // Safety: `packetizer` and `timeline` are used only by `next()`, which one task calls at a
    // time (the session's sender); everything else is immutable or Sendable.

    /// An RTSP client gets at most a second of backlog; older packets go, up to a keyframe.
    public static let defaultPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 1000))

    public let handle: OutputHandle
    public let description: RTSPDescription
    /// The client's own packetizer (RTSP), or the stream's cut shared by its WebRTC viewers.
    private let packetizer: (any RTPPacketizing)?
    private let shared: RTPCut?
    private let timeline = PacketTimeline()
    private let layout: [String]
    private let ended = Atomic<Bool>(false)
    private let left = Atomic<Bool>(false)

    /// The session description of `hub`'s latest connection; nil before its first.
    public static func describe(_ hub: StreamHub, format: RTPPayloadFormat = .perTrack) throws(FFmpegError) -> RTSPDescription? {
        guard let epoch = hub.latestEpoch else { return nil }
        let p = try packetizer(format, epoch, title: hub.title ?? hub.name)
        return RTSPDescription(format: format, sdp: p.sdp, tracks: p.tracks, skipped: p.skipped)
    }

    private static func packetizer(_ format: RTPPayloadFormat, _ epoch: IngestEpoch, title: String, maxPacketSize: Int = 1400) throws(FFmpegError) -> any RTPPacketizing {
        switch format {
        case .perTrack: return try RTPPacketizer(streams: epoch.streams, title: title, maxPacketSize: maxPacketSize)
        case .mpegTS: return try MPEGTSPacketizer(streams: epoch.streams, title: title)
        }
    }

    /// Audio codecs WebRTC carries as they are; any other audio track is made Opus when asked.
    package static let webRTCAudio: Set<String> = ["opus", "pcm_mulaw", "pcm_alaw"]

    /// A feed of `hub` for one client, registered as output `name`; its description is that of
    /// the stream's latest connection. Nil before the stream's first connection.
    /// `maxPacketSize`: the largest RTP packet (WebRTC leaves room for SRTP's tag and a TURN relay).
    /// `audioToOpus`: audio in a codec WebRTC does not carry (AAC …) is transcoded to Opus
    /// for this client (the video is never re-encoded); a track that cannot be is left as it is.
    public static func attach(hub: StreamHub, name: String, kind: OutputKind = .rtsp, format: RTPPayloadFormat = .perTrack,
                              policy: SinkPolicy = defaultPolicy, maxPacketSize: Int = 1400) throws(FFmpegError) -> RTPFeed? {
        guard let epoch = hub.latestEpoch else { return nil }
        let p = try packetizer(format, epoch, title: hub.title ?? hub.name, maxPacketSize: maxPacketSize)
        let feed = RTPFeed(hub: hub, name: name, kind: kind, packetizer: p, shared: nil, format: format, layout: Self.layout(epoch), policy: policy)
        // The client starts at a keyframe: a source that can be asked sends one now.
        hub.requestKeyframe()
        return feed
    }

    /// A feed of `hub` for one WebRTC viewer, registered as output `name`, whose RTP is cut once
    /// for all the stream's viewers (`RTPCut`); audio in a codec WebRTC does not carry (AAC …)
    /// is transcoded to Opus there (the video is never re-encoded). Nil before the stream's
    /// first connection. End it with `finish()`.
    public static func attachShared(hub: StreamHub, name: String, kind: OutputKind = .webrtc, policy: SinkPolicy = defaultPolicy,
                                    maxPacketSize: Int = 1200) throws(FFmpegError) -> RTPFeed? {
        guard let cut = try RTPCut.join(hub: hub, maxPacketSize: maxPacketSize, audioToOpus: true) else { return nil }
        let feed = RTPFeed(hub: hub, name: name, kind: kind, packetizer: nil, shared: cut, format: .perTrack, layout: cut.layout, policy: policy)
        hub.requestKeyframe()
        return feed
    }

    private init(hub: StreamHub, name: String, kind: OutputKind, packetizer: (any RTPPacketizing)?, shared: RTPCut?, format: RTPPayloadFormat,
                 layout: [String], policy: SinkPolicy) {
        self.packetizer = packetizer
        self.shared = shared
        self.layout = layout
        if let shared {
            description = shared.description
        } else if let packetizer {
            description = RTSPDescription(format: format, sdp: packetizer.sdp, tracks: packetizer.tracks, skipped: packetizer.skipped)
        } else {
            description = RTSPDescription(format: format, sdp: "", tracks: [], skipped: [])
        }
        handle = hub.attachOutput(name, kind: kind, policy: policy, taking: .async)
        hub.register(self)
    }

    /// The stream's cut this feed shares with the other WebRTC viewers (nil for RTSP's own).
    public var cut: RTPCut? { shared }

    public func start() {}
    public func stop() async { handle.queue.close() }

    /// Ends the feed: its queue closes, the stream forgets it, and it leaves the shared cut.
    public func finish() {
        handle.queue.close()
        handle.detach()
        if !left.exchange(true, ordering: .relaxed) { shared?.leave() }
    }

    /// What must stay the same for the session's tracks to carry a new connection.
    package static func layout(_ epoch: IngestEpoch) -> [String] {
        epoch.streams.map { "\($0.index):\($0.codecName)" }
    }

    /// The next packet's RTP packets (and any RTCP sender report before them), waiting for one;
    /// nil once the feed or the stream ended, or the source came back with other tracks.
    public func next() async -> [RTPPacketizer.Datagram]? {
        guard let packetizer else { return await nextPiece()?.datagrams }
        let queue = handle.queue
        while !ended.load(ordering: .relaxed), let p = await handle.next() {
            if queue.takeDiscontinuity() { timeline.restart() }
            guard let at = timeline.place(p) else { continue }
            if at.newEpoch && Self.layout(at.epoch) != layout {
                ended.store(true, ordering: .relaxed)
                return nil
            }
            do {
                let out = try packetizer.packetize(at.packet, pts: at.pts, dts: at.dts)
                if !out.isEmpty { return out }
            } catch {
                handle.countError()
                queue.dropTaken(.resync)
                timeline.restart()
            }
        }
        return nil
    }

    /// A shared feed's next packet's RTP (no RTCP: the viewer reports for itself), waiting for
    /// one; nil once the feed or the stream ended, or the source came back with other tracks.
    public func nextPiece() async -> RTPCut.Piece? {
        guard let shared else { return nil }
        let queue = handle.queue
        while !ended.load(ordering: .relaxed), let p = await handle.next() {
            _ = queue.takeDiscontinuity()
            switch shared.lookup(p) {
            case .piece(let piece):
                if !piece.datagrams.isEmpty { return piece }
            case .missed:
                // Kept longer than the cut keeps its RTP: resume at a keyframe, counted.
                queue.dropTaken(.resync)
                queue.discardAll(.resync, always: true)
            case .ended:
                ended.store(true, ordering: .relaxed)
                return nil
            }
        }
        return nil
    }
}
