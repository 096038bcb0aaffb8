public import Logging

/// What a feature is given when the engine makes it: the configuration it starts with, where
/// API changes and recordings are catalogued, the event bus, a logger.
public struct EngineContext: Sendable {
    public let configuration: Configuration
    public let catalog: (any CatalogStore)?
    public let events: StreamEventBus
    public let logger: Logger
}

/// A part of LiveRelay that plugs into the engine: for each stream the engine makes, it adds its
/// outputs to the stream's hub (outputs register themselves with their hub) or the sources it
/// opens to the stream's opener; it runs while the engine runs. The engine names no feature:
/// `RelayEngine.standardFeatures` lists LiveRelay's (preview, HLS, recording, forwards,
/// renditions, hooks), and an embedding program may pass its own list. In order: `start`, then
/// (while running) `removed` for each stream taken away, then `stopping`, `drain`, `stop`.
public protocol EngineFeature: AnyObject, Sendable {
    /// URL schemes this feature opens, registered on the opener of each stream before its hub
    /// is made.
    func register(sources: inout SourceOpener, for stream: Configuration.Stream, engine: RelayEngine)
    /// Adds this feature's outputs for `stream` (as placed) to its hub, not started yet.
    func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger)
    /// A stream is gone (removed, or about to be made again): its outputs have stopped.
    func removed(_ stream: String)
    /// The engine starts (before any output or ingest).
    func start(engine: RelayEngine)
    /// The engine is stopping: nothing has stopped yet.
    func stopping()
    /// Every ingest and output has stopped; the event bus still carries what this says.
    func drain() async
    /// The event bus has ended: the last thing the engine does.
    func stop() async
}

extension EngineFeature {
    public func register(sources: inout SourceOpener, for stream: Configuration.Stream, engine: RelayEngine) {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {}
    public func removed(_ stream: String) {}
    public func start(engine: RelayEngine) {}
    public func stopping() {}
    public func drain() async {}
    public func stop() async {}
}

/// Makes a feature for an engine.
public typealias EngineFeatureMaker = @Sendable (EngineContext) -> any EngineFeature

extension RelayEngine {
    /// LiveRelay's features, in the order their outputs are added to a hub.
    public static let standardFeatures: [EngineFeatureMaker] = [
        { _ in PreviewFeature() }, { _ in HLSFeature() }, { RecordingFeature($0) }, { _ in ForwardFeature() },
        { _ in RenditionsFeature() }, { HooksFeature($0) },
    ]

    /// The engine's feature of this type, if it has one.
    public func feature<F: EngineFeature>(_ type: F.Type) -> F? {
        for f in features { if let f = f as? F { return f } }
        return nil
    }
}
