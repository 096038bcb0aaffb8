import Hummingbird
import Relay
import NIOCore
import HTTPTypes
import Prometheus

/// `/metrics` (Prometheus text) and `/healthz`.
enum MetricsRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, metrics: RelayMetrics) {
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/metrics") { _, _ in
            metrics.update(engine: engine)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.registry.emitToString())))
        }
    }
}
