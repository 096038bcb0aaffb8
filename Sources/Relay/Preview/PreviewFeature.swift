public import Logging

/// `streams.NAME.preview`: the MJPEG preview and the wall's pictures.
public final class PreviewFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        if let p = stream.preview { _ = PreviewService(hub: hub, settings: p) }
    }
}

extension RelayEngine {
    public func preview(_ stream: String) -> PreviewService? { outputs(stream, PreviewService.self).first }
}
