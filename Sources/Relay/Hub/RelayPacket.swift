public import MediaCore

/// One connection's worth of a source: its streams, as opened. A reconnect starts a new epoch
/// (timestamps restart, parameters may change), which packet sinks mark as a discontinuity.
public final class IngestEpoch: Sendable {
    public let generation: Int
    public let streams: [StreamInfo]
    /// The stream keyframes are taken from (the first video stream), if any.
    public let videoIndex: Int?

    public init(generation: Int, streams: [StreamInfo]) {
        self.generation = generation
        self.streams = streams
        videoIndex = streams.first { $0.mediaType == .video }?.index
    }

    public func stream(_ index: Int) -> StreamInfo? { streams.first { $0.index == index } }
}

/// What packet sinks receive: a packet and the epoch it belongs to.
public struct RelayPacket: QueueItem {
    public let packet: Packet
    public let epoch: IngestEpoch

    public init(packet: Packet, epoch: IngestEpoch) {
        self.packet = packet
        self.epoch = epoch
    }

    public var arrivalNanos: UInt64 { packet.arrivalNanos }
    /// Ordering is judged on the video stream's decode timestamps (other streams have their own
    /// time bases and interleave freely).
    public var presentationTime: Int64? {
        packet.streamIndex == epoch.videoIndex ? (packet.dts ?? packet.pts) : nil
    }
    /// A point a packet sink may resume at: a video keyframe (any packet when there is no video).
    public var isKeyframe: Bool {
        packet.isKeyframe && (epoch.videoIndex == nil || packet.streamIndex == epoch.videoIndex)
    }
}
