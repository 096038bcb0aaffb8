public import Relay
public import Logging
public import ServiceLifecycle
import Hummingbird
import NIOCore
import UnixSignals

/// Runs the engine and its HTTP server until SIGINT/SIGTERM, then stops both gracefully.
public enum RelayServerApp {
    public static func run(configuration: Configuration, logger: Logger, onListening: @escaping @Sendable (Int) -> Void) async throws {
        let engine = RelayEngine(configuration: configuration, logger: logger)
        let metrics = RelayMetrics()
        var pushers: [HLSPusher] = []
        for (name, segmenter) in engine.hls.sorted(by: { $0.key < $1.key }) {
            guard let base = segmenter.store.settings.push else { continue }
            var l = logger
            l[metadataKey: "stream.name"] = "\(name)"
            let pusher = HLSPusher(base: base, logger: l)
            segmenter.store.addOutput { pusher.handle($0) }
            pushers.append(pusher)
        }
        let app = Application(
            router: RelayHTTP.router(engine: engine, metrics: metrics),
            configuration: .init(address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "LiveRelay"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? configuration.listenPort) },
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: EngineService(engine: engine, pushers: pushers)), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }
}

/// Starts every stream; on graceful shutdown stops them, which also ends preview responses.
struct EngineService: Service {
    let engine: RelayEngine
    let pushers: [HLSPusher]
    func run() async throws {
        for p in pushers { p.start() }
        engine.start()
        try? await gracefulShutdown()
        engine.stop()
        // The ended playlists reach the origin too (bounded).
        for p in pushers { p.stop(timeout: 3) }
    }
}
