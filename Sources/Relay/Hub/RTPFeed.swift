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
    private let packetizer: any RTPPacketizing
    private let timeline = PacketTimeline()
    /// Audio tracks made Opus for this client, by source stream index (WebRTC: AAC sources).
    private let transcoders: [Int: OpusTranscoder]
    private let layout: [String]
    private let ended = Atomic<Bool>(false)

    /// The session description of `hub`'s latest connection; nil before its first.
    public static func describe(_ hub: StreamHub, format: RTPPayloadFormat = .perTrack) throws(FFmpegError) -> RTSPDescription? {
        guard let epoch = hub.latestEpoch else { return nil }
        let p = try packetizer(format, epoch, title: hub.title ?? hub.name)
        return RTSPDescription(format: format, sdp: p.sdp, tracks: p.tracks, skipped: p.skipped)
    }

    private static func packetizer(_ format: RTPPayloadFormat, _ epoch: IngestEpoch, title: String, maxPacketSize: Int = 1400,
                                   streams: [StreamInfo]? = nil) throws(FFmpegError) -> any RTPPacketizing {
        switch format {
        case .perTrack: return try RTPPacketizer(streams: streams ?? epoch.streams, title: title, maxPacketSize: maxPacketSize)
        case .mpegTS: return try MPEGTSPacketizer(streams: streams ?? epoch.streams, title: title)
        }
    }

    /// Audio codecs WebRTC carries as they are; any other audio track is made Opus when asked.
    static let webRTCAudio: Set<String> = ["opus", "pcm_mulaw", "pcm_alaw"]

    /// A feed of `hub` for one client, registered as output `name`; its description is that of
    /// the stream's latest connection. Nil before the stream's first connection.
    /// `maxPacketSize`: the largest RTP packet (WebRTC leaves room for SRTP's tag and a TURN relay).
    /// `audioToOpus`: audio in a codec WebRTC does not carry (AAC …) is transcoded to Opus
    /// for this client (the video is never re-encoded); a track that cannot be is left as it is.
    public static func attach(hub: StreamHub, name: String, kind: OutputKind = .rtsp, format: RTPPayloadFormat = .perTrack,
                              policy: SinkPolicy = defaultPolicy, maxPacketSize: Int = 1400, audioToOpus: Bool = false) throws(FFmpegError) -> RTPFeed? {
        guard let epoch = hub.latestEpoch else { return nil }
        var streams = epoch.streams
        var transcoders: [Int: OpusTranscoder] = [:]
        if audioToOpus {
            for (i, s) in streams.enumerated() where s.mediaType == .audio && !webRTCAudio.contains(s.codecName) {
                guard let t = try? OpusTranscoder(source: s) else { continue }
                transcoders[s.index] = t
                streams[i] = t.streamInfo
            }
        }
        let p = try packetizer(format, epoch, title: hub.title ?? hub.name, maxPacketSize: maxPacketSize, streams: streams)
        let feed = RTPFeed(hub: hub, name: name, kind: kind, packetizer: p, format: format, layout: Self.layout(epoch), policy: policy, transcoders: transcoders)
        // The client starts at a keyframe: a source that can be asked sends one now.
        hub.requestKeyframe()
        return feed
    }

    private init(hub: StreamHub, name: String, kind: OutputKind, packetizer: any RTPPacketizing, format: RTPPayloadFormat, layout: [String], policy: SinkPolicy,
                 transcoders: [Int: OpusTranscoder] = [:]) {
        self.packetizer = packetizer
        self.transcoders = transcoders
        self.layout = layout
        description = RTSPDescription(format: format, sdp: packetizer.sdp, tracks: packetizer.tracks, skipped: packetizer.skipped)
        handle = hub.attachOutput(name, kind: kind, policy: policy, taking: .async)
        hub.register(self)
    }

    public func start() {}
    public func stop() async { handle.queue.close() }


    /// What must stay the same for the session's tracks to carry a new connection.
    private static func layout(_ epoch: IngestEpoch) -> [String] {
        epoch.streams.map { "\($0.index):\($0.codecName)" }
    }

    /// The next packet's RTP packets (and any RTCP sender report before them), waiting for one;
    /// nil once the feed or the stream ended, or the source came back with other tracks.
    public func next() async -> [RTPPacketizer.Datagram]? {
        let queue = handle.queue
        while !ended.load(ordering: .relaxed), let p = await handle.next() {
            if queue.takeDiscontinuity() { timeline.restart() }
            guard let at = timeline.place(p) else { continue }
            if at.newEpoch && Self.layout(at.epoch) != layout {
                ended.store(true, ordering: .relaxed)
                return nil
            }
            do {
                if let t = transcoders[at.packet.streamIndex] {
                    var out: [RTPPacketizer.Datagram] = []
                    for o in t.transcode(at.packet, pts: at.pts) {
                        out += try packetizer.packetize(o.packet, pts: o.pts, dts: o.pts)
                    }
                    if !out.isEmpty { return out }
                    continue
                }
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
}
