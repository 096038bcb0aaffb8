public import Relay
public import Logging
public import ServiceLifecycle
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import NIOCore
import NIOSSL
import UnixSignals

/// Runs the engine and its HTTP server until SIGINT/SIGTERM, then stops both gracefully.
public enum RelayServerApp {
    public static func run(configuration: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil,
                           logger: Logger, onListening: @escaping @Sendable (Int) -> Void) async throws {
        let engine = RelayEngine(configuration: configuration, sources: sources, captureAge: captureAge, logger: logger)
        let metrics = RelayMetrics()
        let router = try await RelayHTTP.router(engine: engine, metrics: metrics)
        let appConfiguration = ApplicationConfiguration(address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "LiveRelay")
        let onRunning: @Sendable (any Channel) async -> Void = { channel in onListening(channel.localAddress?.port ?? configuration.listenPort) }
        // Idle connections and half-sent requests (slowloris) are closed after idle_timeout;
        // a response whose client stopped reading, after write_stall_timeout.
        let limits = configuration.limits
        let stall = TimeAmount.milliseconds(Int64(limits.writeStallTimeout * 1000))
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [WriteStallHandler(timeout: stall)],
                                               idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)))
        let server: any Service
        if let tls = configuration.tls {
            // HTTPS, with ALPN offering h2 and http/1.1.
            let h2 = HTTP2UpgradeChannel.Configuration(idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)), streamConfiguration: http1)
            server = Application(router: router, server: try .http2Upgrade(tlsConfiguration: try tlsConfiguration(tls), configuration: h2),
                                 configuration: appConfiguration, onServerRunning: onRunning, logger: logger)
        } else {
            server = Application(router: router, server: .http1(configuration: http1), configuration: appConfiguration,
                                 onServerRunning: onRunning, logger: logger)
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: EngineService(engine: engine)), .init(service: server)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }

    /// The server's certificate chain and key from PEM files; one line when they cannot be used.
    static func tlsConfiguration(_ tls: TLSSettings) throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(tls.certificate)
        } catch {
            throw TLSSetupError(description: "server.tls.cert: cannot read a PEM certificate from \(tls.certificate): \(error)")
        }
        do {
            key = try NIOSSLPrivateKey(file: tls.key, format: .pem)
        } catch {
            throw TLSSetupError(description: "server.tls.key: cannot read a PEM private key from \(tls.key): \(error)")
        }
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    }
}

/// The TLS files cannot be used: says which and why, in one line.
public struct TLSSetupError: Error, CustomStringConvertible {
    public let description: String
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
