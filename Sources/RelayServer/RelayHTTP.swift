public import Hummingbird
public import Relay

/// LiveRelay's HTTP face, one route group per feature: API, preview, HLS, pages, metrics.
public enum RelayHTTP {
    public static func router(engine: RelayEngine, metrics: RelayMetrics) async throws -> Router<RelayRequestContext> {
        try await routers(engine: engine, metrics: metrics).http
    }

    /// The HTTP routes, and the WebSocket routes (the ops wall), behind the same access checks.
    public static func routers(engine: RelayEngine, metrics: RelayMetrics) async throws
        -> (http: Router<RelayRequestContext>, webSocket: Router<RelayRequestContext>) {
        let c = engine.configuration
        let access = try await AccessControl(auth: c.auth, allowedHosts: c.effectiveAllowedHosts)
        metrics.access = access
        let router = Router(context: RelayRequestContext.self)
        router.add(middleware: AccessMiddleware(access: access))
        MetricsRoutes.add(to: router, engine: engine, metrics: metrics)
        PageRoutes.add(to: router, engine: engine)
        APIRoutes.add(to: router, engine: engine)
        let limits = ClientLimits(viewers: c.limits.viewersPerClient, blockingRequests: c.limits.blockingRequestsPerClient)
        PreviewRoutes.add(to: router, engine: engine, limits: limits)
        HLSRoutes.add(to: router, engine: engine, limits: limits)
        IngestRoutes.add(to: router, engine: engine)
        let ws = Router(context: RelayRequestContext.self)
        ws.add(middleware: AccessMiddleware(access: access))
        WallRoutes.add(to: ws, engine: engine)
        return (router, ws)
    }
}
