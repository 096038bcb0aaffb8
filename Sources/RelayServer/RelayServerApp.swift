public import Relay
public import Logging
public import ServiceLifecycle
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdWebSocket
import IngestServer
import RTSPServer
import Foundation
import NIOCore
import NIOSSL
import UnixSignals

/// Runs the engine and its HTTP server until SIGINT/SIGTERM, then stops both gracefully.
public enum RelayServerApp {
    /// - Parameter reload: reads the configuration again (on SIGHUP: streams added, removed or
    ///   changed are applied; unchanged ones keep running).
    public static func run(configuration: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil,
                           reload: (@Sendable () throws -> Configuration)? = nil,
                           logger: Logger, onListening: @escaping @Sendable (Int) -> Void) async throws {
        let engine = RelayEngine(configuration: configuration, sources: sources, captureAge: captureAge, logger: logger)
        let metrics = RelayMetrics()
        let (router, wsRouter) = try await RelayHTTP.routers(engine: engine, metrics: metrics)
        let appConfiguration = ApplicationConfiguration(address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "LiveRelay")
        let onRunning: @Sendable (any Channel) async -> Void = { channel in onListening(channel.localAddress?.port ?? configuration.listenPort) }
        // Idle connections and half-sent requests (slowloris) are closed after idle_timeout;
        // a response whose client stopped reading, after write_stall_timeout.
        let limits = configuration.limits
        let stall = TimeAmount.milliseconds(Int64(limits.writeStallTimeout * 1000))
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [WriteStallHandler(timeout: stall)],
                                               idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)))
        // The wall's socket: frames up to 8 MiB (a keyframe in one frame), pinged every 15 s.
        let ws = WebSocketServerConfiguration(maxFrameSize: 8 << 20, autoPing: .enabled(timePeriod: .seconds(15)))
        let wsChannel = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1, ws: ws)
        let connections = ConnectionCount(limit: limits.connections)
        let server: any Service
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: EngineService(engine: engine))]
        // SIGHUP: the configuration's streams (applied where changed) and the certificate.
        var onHangup: [@Sendable () async -> Void] = []
        if let reload {
            onHangup.append {
                do {
                    let r = await engine.reload(try reload())
                    logger.notice("configuration reloaded", metadata: ["added": "\(r.added)", "removed": "\(r.removed)",
                                                                      "changed": "\(r.changed)", "unchanged": "\(r.unchanged.count)"])
                } catch {
                    logger.error("configuration not reloaded; the running one stays", metadata: ["error": "\(error)"])
                }
            }
        }
        // HTTPS and RTMPS share the certificate, re-read on SIGHUP.
        let certificates = try configuration.tls.map { try CertificateStore($0) }
        if let certificates {
            onHangup.append {
                do {
                    try certificates.reload()
                    logger.info("tls: certificate reloaded", metadata: ["cert": "\(certificates.settings.certificate)"])
                } catch {
                    logger.error("tls: certificate not reloaded; the previous one stays", metadata: ["error": "\(error)"])
                }
            }
        }
        if let rtmp = configuration.ingest.rtmp {
            let tls = try rtmp.tls ? certificates.map { try NIOSSLContext(configuration: $0.serverConfiguration()) } : nil
            let ingest = RTMPIngestServer(settings: rtmp, engine: engine, logger: logger, tls: tls, authorizeUser: metrics.access?.publishAuthorizer)
            services.append(.init(service: RTMPIngestService(server: ingest, settings: rtmp)))
            metrics.watchIngest("rtmp") { ingest.refusals }
        }
        if let srt = configuration.ingest.srt {
            let ingest = SRTIngestServer(settings: srt, engine: engine, logger: logger, authorizeUser: metrics.access?.publishAuthorizer)
            services.append(.init(service: SRTIngestService(server: ingest, settings: srt)))
            metrics.watchIngest("srt") { ingest.refusals }
        }
        if let rtsp = configuration.rtsp, let access = metrics.access {
            let rtspServer = RTSPServer(engine: engine, host: rtsp.host, port: rtsp.port, maxConnections: limits.connections,
                                        stallTimeout: limits.writeStallTimeout, sessionTimeout: configuration.rtspSessionTimeout,
                                        logger: logger, authorize: access.rtspAuthorizer)
            services.append(.init(service: RTSPService(server: rtspServer)))
        }
        if let certificates {
            // HTTPS, with ALPN offering h2 and http/1.1; the certificate is re-read on SIGHUP.
            let h2 = HTTP2UpgradeChannel.Configuration(idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)), streamConfiguration: http1)
            let tls = try certificates.serverConfiguration()
            let wsResponder = wsRouter.buildResponder()
            let builder = HTTPServerBuilder { responder in
                var channel = try SecureHTTPChannel(tls: tls,
                                      http1: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: wsResponder, configuration: wsChannel),
                                      http2: HTTP2Channel(responder: responder, configuration: h2),
                                      headDeadline: .milliseconds(Int64(limits.idleTimeout * 1000)))
                channel.count = connections
                return channel
            }
            server = Application(router: router, server: builder, configuration: appConfiguration, onServerRunning: onRunning, logger: logger)
        } else {
            let wsResponder = wsRouter.buildResponder()
            let idle = TimeAmount.milliseconds(Int64(limits.idleTimeout * 1000))
            let builder = HTTPServerBuilder { responder in
                HeadDeadlineChannel(inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: wsResponder, configuration: wsChannel),
                                    timeout: idle, count: connections)
            }
            server = Application(router: router, server: builder, configuration: appConfiguration,
                                 onServerRunning: onRunning, logger: logger)
        }
        if !onHangup.isEmpty { services.append(.init(service: HangupService(actions: onHangup))) }
        let group = ServiceGroup(configuration: .init(
            services: services + [.init(service: server)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
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

/// The one-port RTMP ingest, for as long as the server runs.
struct RTMPIngestService: Service {
    let server: RTMPIngestServer
    let settings: IngestSettings.RTMPIngest
    func run() async throws {
        let port = try await server.start()
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        FileHandle.standardOutput.write(Data("RTMP ingest listening on \(settings.tls ? "rtmps" : "rtmp")://\(host):\(port)/\(settings.app)/\n".utf8))
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// The one-port SRT ingest, for as long as the server runs.
struct SRTIngestService: Service {
    let server: SRTIngestServer
    let settings: IngestSettings.SRTIngest
    func run() async throws {
        let port = try server.start()
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        FileHandle.standardOutput.write(Data("SRT ingest listening on srt://\(host):\(port) (streamid=NAME)\n".utf8))
        try? await gracefulShutdown()
        server.stop()
    }
}

/// The RTSP server (`server.rtsp.listen`), for as long as the server runs.
struct RTSPService: Service {
    let server: RTSPServer
    func run() async throws {
        let port = try await server.start()
        let host = server.host.contains(":") ? "[\(server.host)]" : server.host
        FileHandle.standardOutput.write(Data("RTSP server listening on rtsp://\(host):\(port)/\n".utf8))
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// Runs every action on each SIGHUP, in order, until shutdown.
struct HangupService: Service {
    let actions: [@Sendable () async -> Void]

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // Ends with the server: cancelled on graceful shutdown, which ends the signal loop.
        try? await cancelWhenGracefulShutdown {
            for await _ in hangups {
                for action in actions { await action() }
            }
        }
    }
}
