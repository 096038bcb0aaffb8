/// The `hooks` section: webhooks and commands on stream events.
public final class HooksFeature: EngineFeature {
    /// nil when the section names none.
    public let hooks: Hooks?
    public init(_ context: EngineContext) {
        hooks = context.configuration.hooks.isEmpty ? nil : Hooks(settings: context.configuration.hooks, events: context.events, logger: context.logger)
    }
    public func start(engine: RelayEngine) { hooks?.start() }
    /// After the event bus ended: the last events are delivered.
    public func stop() async { await hooks?.stop() }
}

extension RelayEngine {
    /// The `hooks` section's webhooks and commands; nil when there are none.
    public var hooks: Hooks? { feature(HooksFeature.self)?.hooks }
}
