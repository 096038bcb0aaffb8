import MediaCore
public import Relay
import Wire
import Synchronization

/// One H.264 access unit for a viewer that decodes it itself (WebCodecs on the ops wall).
public struct VideoChunk: Sendable {
    /// Annex B, parameter sets included on keyframes.
    public let data: [UInt8]
    public let isKeyframe: Bool
    /// Presentation time in microseconds, on the source's clock.
    public let timestampMicros: Int64
    /// When the packet arrived (monotonic nanoseconds).
    public let arrivalNanos: UInt64
    /// `avc1.PPCCLL`.
    public let codec: String
    public let width: Int
    public let height: Int
    /// The decoder starts over here: a new connection to the source (parameters may differ).
    public let restart: Bool
    /// When the sender says the picture was taken (RTSP sender reports), Unix milliseconds.
    public let senderWallMillis: Double?
}

/// One audio access unit for the ops wall's selected tile (WebCodecs' AudioDecoder), as
/// received: AAC (raw with its AudioSpecificConfig, or ADTS when there is none) or Opus.
public struct AudioChunk: Sendable {
    public let data: [UInt8]
    /// Presentation time in microseconds, on the source's clock (the video's).
    public let timestampMicros: Int64
    public let arrivalNanos: UInt64
    /// `mp4a.40.2`, `opus`.
    public let codec: String
    public let sampleRate: Int
    public let channels: Int
    /// The decoder's description (AudioSpecificConfig, OpusHead); empty: ADTS-framed AAC.
    public let description: [UInt8]

    /// What the page configures its AudioDecoder with, in the frame's codec field:
    /// `CODEC/RATE/CHANNELS/DESCRIPTION-HEX`.
    public var configuration: String {
        "\(codec)/\(sampleRate)/\(channels)/" + Hex.encode(description)
    }
}

/// One viewer's copy of a stream's H.264, neither decoded nor re-encoded: what the ops wall sends
/// a browser. An output like any other (kind `viewer`, listed by the API, drops counted), with
/// its own bounded queue under the viewer's policy: a viewer that falls behind skips to the next
/// keyframe, and never slows the stream or another viewer.
public final class VideoFeed: PacketOutput, Sendable {
    public enum Item: Sendable {
        case chunk(VideoChunk)
        /// The stream's first audio track, while the viewer listens (`listen(true)`).
        case audio(AudioChunk)
        /// The stream's video is not H.264: the viewer takes another path.
        case unsupported(codec: String)
    }

    /// What a wall viewer uses unless it asks otherwise: nothing older than half a second.
    public static let defaultPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 500))

    public let handle: OutputHandle
    /// The viewer listens to this tile: its audio is sent too.
    private let listening = Atomic<Bool>(false)

    /// Sends the stream's audio as well (the wall's selected, unmuted tile), or stops it.
    public func listen(_ on: Bool) { listening.store(on, ordering: .relaxed) }
    /// The connection (epoch generation) the converter was made for, and whether a keyframe
    /// has started this viewer's decoder on it.
    private let converter = Mutex<(generation: Int, annexB: H264AnnexB, started: Bool)?>(nil)

    /// A feed of `hub`'s video for one viewer, registered as output `name`.
    public static func attach(hub: StreamHub, name: String, policy: SinkPolicy = defaultPolicy) -> VideoFeed {
        VideoFeed(hub: hub, name: name, policy: policy)
    }

    private init(hub: StreamHub, name: String, policy: SinkPolicy) {
        handle = hub.attachOutput(name, kind: .viewer, policy: policy, taking: .async)
        hub.register(self)
    }

    public func start() {}
    public func stop() async { handle.queue.close() }

    /// The next access unit, waiting for one; nil once the feed or the stream ended.
    public func next() async -> Item? {
        while let p = await handle.next() {
            if let item = convert(p) { return item }
        }
        return nil
    }

    private func convert(_ p: RelayPacket) -> Item? {
        guard let video = p.epoch.videoIndex, p.packet.streamIndex == video, let info = p.epoch.stream(video) else {
            return listening.load(ordering: .relaxed) ? audio(p) : nil    // data: a wall tile shows pictures
        }
        guard info.parameters.isH264 else { return .unsupported(codec: info.codecName) }
        let keyframe = p.packet.isKeyframe
        let out = converter.withLock { c -> (VideoChunk?, Bool) in
            var restart = false
            if c == nil || c!.generation != p.epoch.generation {
                c = (p.epoch.generation, H264AnnexB(extradata: info.parameters.extradata), false)
                restart = true
            }
            // A decoder starts at a keyframe: anything before the first is of no use.
            guard keyframe || c!.started else { return (nil, true) }
            if keyframe && !c!.started { c!.started = true; restart = true }
            let data = c!.annexB.accessUnit(p.packet.data, keyframe: keyframe)
            guard let codec = c!.annexB.codec else { return (nil, true) }
            let tb = info.timeBase
            let pts = p.packet.pts ?? p.packet.dts ?? 0
            let micros = Int64(saturating: (Double(pts) * Double(tb.numerator) / Double(max(1, tb.denominator)) * 1_000_000).rounded())
            return (VideoChunk(data: data, isKeyframe: keyframe, timestampMicros: micros, arrivalNanos: p.arrivalNanos,
                               codec: codec, width: info.width, height: info.height, restart: restart,
                               senderWallMillis: p.packet.senderWallMicros.map { Double($0) / 1000 }), false)
        }
        if out.1 { handle.queue.dropTaken(.resync) }
        return out.0.map { .chunk($0) }
    }

    /// The first audio track's packet as the page's AudioDecoder takes it: AAC or Opus, passed
    /// on as received (no decode, no re-encode); other codecs are not heard.
    private func audio(_ p: RelayPacket) -> Item? {
        guard let info = p.epoch.streams.first(where: { $0.mediaType == .audio }), info.index == p.packet.streamIndex else { return nil }
        let extradata = info.parameters.extradata
        let codec: String
        switch info.codecName {
        case "aac":
            // The AudioSpecificConfig's object type (its first five bits): 2 is AAC-LC.
            let objectType = extradata.first.map { Int($0 >> 3) } ?? 2
            codec = "mp4a.40.\(objectType == 0 || objectType == 31 ? 2 : objectType)"
        case "opus": codec = "opus"
        default: return nil
        }
        let tb = info.timeBase
        let pts = p.packet.pts ?? p.packet.dts ?? 0
        let micros = Int64(saturating: (Double(pts) * Double(tb.numerator) / Double(max(1, tb.denominator)) * 1_000_000).rounded())
        return .audio(AudioChunk(data: p.packet.data, timestampMicros: micros, arrivalNanos: p.arrivalNanos, codec: codec,
                                 sampleRate: info.parameters.sampleRate, channels: info.parameters.channels,
                                 description: Array(extradata.prefix(64))))
    }
}
