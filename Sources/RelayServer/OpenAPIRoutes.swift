import Hummingbird
import HTTPTypes
import NIOCore

/// `GET /api/openapi.json`: the API described (OpenAPI 3.1), for clients, code generators and
/// schemathesis.
enum OpenAPIRoutes {
    static func add(to router: Router<RelayRequestContext>) {
        let body = ByteBuffer(string: OpenAPIDocument.json)
        router.get("/api/openapi.json") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
        }
    }
}
