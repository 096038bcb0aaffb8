public import Logging

/// `streams.NAME.hls`: HLS and LL-HLS, kept in memory, written to a directory or pushed.
public final class HLSFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        guard let h = stream.hls else { return }
        // A rendition's segments follow its parent's: the same picture at the same time, in the
        // segment of the same media sequence number.
        var leader: (@Sendable () -> HLSSegmenter?)?
        if let parent = stream.partOf {
            leader = { [weak engine] () -> HLSSegmenter? in engine?.hls(parent) }
        }
        _ = HLSSegmenter(hub: hub, settings: h, leader: leader, logger: logger)
    }
}

extension RelayEngine {
    public func hls(_ stream: String) -> HLSSegmenter? { outputs(stream, HLSSegmenter.self).first }
}
