import Hummingbird
import Foundation
import NIOCore
import HTTPTypes
import RelayAPI

/// The shapes every route answers in: JSON (RelayAPI's encoder: snake_case keys), a JSON
/// error (`APIError`), HTML.
enum HTTPResponses {
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try RelayAPI.encoder.encode(value)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func jsonError(_ status: HTTPResponse.Status, _ message: String) throws -> Response {
        try json(APIError(error: message), status: status)
    }

    static func html(_ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
