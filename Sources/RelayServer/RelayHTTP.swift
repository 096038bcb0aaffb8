public import Hummingbird
public import Relay

/// LiveRelay's HTTP face, one route group per feature: API, preview, HLS, pages, metrics.
public enum RelayHTTP {
    public static func router(engine: RelayEngine, metrics: RelayMetrics) -> Router<BasicRequestContext> {
        let router = Router()
        MetricsRoutes.add(to: router, engine: engine, metrics: metrics)
        PageRoutes.add(to: router, engine: engine)
        APIRoutes.add(to: router, engine: engine)
        PreviewRoutes.add(to: router, engine: engine)
        HLSRoutes.add(to: router, engine: engine)
        return router
    }
}
