public import Logging

/// `streams.NAME.forward`: the stream republished to other servers (WHIP endpoints are the
/// WebRTC module's `WHIPPushFeature`'s).
public final class ForwardFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        for (i, target) in stream.forward.enumerated() where !target.isWHIP { _ = Forwarder(hub: hub, index: i, target: target, logger: logger) }
    }
}
