public import Access
public import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdWebSocket
public import Logging
import NIOCore
public import NIOSSL
public import Relay
public import WebRTC
public import ServiceLifecycle

/// LiveRelay's HTTP face, one route group per feature: API, preview, HLS, pages, metrics.
public enum RelayHTTP {
    /// The HTTP routes, and the WebSocket routes (the ops wall), behind the same access checks.
    /// - Parameter nodeKey: signs evidence bundles (`serve` keeps one in its state directory).
    public static func routers(engine: RelayEngine, metrics: RelayMetrics, authorizer: Authorizer, webrtc: WebRTCServer? = nil,
                               nodeKey: NodeKey = .ephemeral())
        -> (http: Router<RelayRequestContext>, webSocket: Router<RelayRequestContext>) {
        let c = engine.configuration
        let router = Router(context: RelayRequestContext.self)
        router.add(middleware: AccessMiddleware(access: authorizer))
        router.add(middleware: FleetRedirectMiddleware(engine: engine))
        FleetRoutes.add(to: router, engine: engine)
        MetricsRoutes.add(to: router, engine: engine, metrics: metrics)
        PageRoutes.add(to: router, engine: engine)
        APIRoutes.add(to: router, engine: engine)
        OpenAPIRoutes.add(to: router)
        RecordingRoutes.add(to: router, engine: engine)
        RecordingPlaybackRoutes.add(to: router, engine: engine, cache: RecordedFileIndexCache())
        IncidentRoutes.add(to: router, engine: engine, key: nodeKey)
        PTZRoutes.add(to: router, engine: engine)
        let limits = ClientLimits(viewers: c.limits.viewersPerClient, blockingRequests: c.limits.blockingRequestsPerClient)
        PreviewRoutes.add(to: router, engine: engine, limits: limits)
        HLSRoutes.add(to: router, engine: engine, limits: limits)
        IngestRoutes.add(to: router, engine: engine)
        if let webrtc {
            WHEPRoutes.add(to: router, engine: engine, webrtc: webrtc)
            TalkRoutes.add(to: router, engine: engine, webrtc: webrtc)
        }
        let ws = Router(context: RelayRequestContext.self)
        ws.add(middleware: AccessMiddleware(access: authorizer))
        WallRoutes.add(to: ws, engine: engine)
        return (router, ws)
    }

    /// The HTTP server (`server.listen`): HTTP/1.1 with the wall's WebSocket upgrade, or, with
    /// `tls`, HTTPS offering h2 and http/1.1 by ALPN. Idle connections and half-sent requests
    /// (slowloris) are closed after `idle_timeout`; a response whose client stopped reading,
    /// after `write_stall_timeout`; at most `limits.connections` at once.
    public static func service(engine: RelayEngine, metrics: RelayMetrics, authorizer: Authorizer, tls: TLSConfiguration?,
                               webrtc: WebRTCServer? = nil, nodeKey: NodeKey = .ephemeral(),
                               logger: Logger, onListening: @escaping @Sendable (Int) -> Void) async throws -> any Service {
        let configuration = engine.configuration
        let (router, wsRouter) = routers(engine: engine, metrics: metrics, authorizer: authorizer, webrtc: webrtc, nodeKey: nodeKey)
        let appConfiguration = ApplicationConfiguration(address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "LiveRelay")
        let onRunning: @Sendable (any Channel) async -> Void = { channel in onListening(channel.localAddress?.port ?? configuration.listenPort) }
        let limits = configuration.limits
        let stall = TimeAmount.milliseconds(Int64(limits.writeStallTimeout * 1000))
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [WriteStallHandler(timeout: stall)],
                                               idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)))
        // The wall's socket: frames up to 8 MiB (a keyframe in one frame), pinged every 15 s.
        let ws = WebSocketServerConfiguration(maxFrameSize: 8 << 20, autoPing: .enabled(timePeriod: .seconds(15)))
        let wsChannel = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1, ws: ws)
        let connections = ConnectionCount(limit: limits.connections)
        if let tls {
            // HTTPS, with ALPN offering h2 and http/1.1; the certificate callback takes the current one.
            let h2 = HTTP2UpgradeChannel.Configuration(idleTimeout: .milliseconds(Int64(limits.idleTimeout * 1000)), streamConfiguration: http1)
            let wsResponder = wsRouter.buildResponder()
            let builder = HTTPServerBuilder { responder in
                var channel = try SecureHTTPChannel(tls: tls,
                                      http1: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: wsResponder, configuration: wsChannel),
                                      http2: HTTP2Channel(responder: responder, configuration: h2),
                                      headDeadline: .milliseconds(Int64(limits.idleTimeout * 1000)))
                channel.count = connections
                return channel
            }
            return Application(router: router, server: builder, configuration: appConfiguration, onServerRunning: onRunning, logger: logger)
        } else {
            let wsResponder = wsRouter.buildResponder()
            let idle = TimeAmount.milliseconds(Int64(limits.idleTimeout * 1000))
            let builder = HTTPServerBuilder { responder in
                HeadDeadlineChannel(inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: wsResponder, configuration: wsChannel),
                                    timeout: idle, count: connections)
            }
            return Application(router: router, server: builder, configuration: appConfiguration,
                                 onServerRunning: onRunning, logger: logger)
        }
    }
}
