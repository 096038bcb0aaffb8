public import Relay
public import Logging
public import ServiceLifecycle
import Hummingbird
import NIOCore
import UnixSignals

/// Runs the engine and its HTTP server until SIGINT/SIGTERM, then stops both gracefully.
public enum RelayServerApp {
    public static func run(configuration: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil,
                           logger: Logger, onListening: @escaping @Sendable (Int) -> Void) async throws {
        let engine = RelayEngine(configuration: configuration, sources: sources, captureAge: captureAge, logger: logger)
        let metrics = RelayMetrics()
        let app = Application(
            router: RelayHTTP.router(engine: engine, metrics: metrics),
            configuration: .init(address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "LiveRelay"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? configuration.listenPort) },
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: EngineService(engine: engine)), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }
}

/// Starts every stream; on graceful shutdown stops them (playlists end, recordings close, the
/// origin gets the ended playlist), which also ends preview responses.
struct EngineService: Service {
    let engine: RelayEngine
    func run() async throws {
        engine.start()
        try? await gracefulShutdown()
        await engine.stop()
    }
}
