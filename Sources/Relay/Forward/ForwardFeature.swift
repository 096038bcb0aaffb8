public import Logging

/// `streams.NAME.forward`: the stream republished to other servers.
public final class ForwardFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        for (i, target) in stream.forward.enumerated() { _ = Forwarder(hub: hub, index: i, target: target, logger: logger) }
    }
}
