public import Hummingbird
public import Relay

/// LiveRelay's HTTP face, one route group per feature: API, preview, HLS, pages, metrics.
public enum RelayHTTP {
    public static func router(engine: RelayEngine, metrics: RelayMetrics) async throws -> Router<RelayRequestContext> {
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
        return router
    }
}
