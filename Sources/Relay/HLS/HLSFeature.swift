public import Logging

/// `streams.NAME.hls`: HLS and LL-HLS, kept in memory, written to a directory or pushed.
public final class HLSFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        guard let h = stream.hls else { return }
        // A rendition's segments follow its parent's times (the same picture, the same time).
        var anchor: (@Sendable () -> Int64?)?
        if let parent = stream.renditionOf {
            anchor = { [weak engine] () -> Int64? in engine?.hls(parent)?.timelineOffset }
        }
        _ = HLSSegmenter(hub: hub, settings: h, anchor: anchor, logger: logger)
    }
}

extension RelayEngine {
    public func hls(_ stream: String) -> HLSSegmenter? { outputs(stream, HLSSegmenter.self).first }
}
