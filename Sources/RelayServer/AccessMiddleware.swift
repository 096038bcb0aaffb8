import Access
import Hummingbird
import HTTPTypes
import NIOCore
import Relay

/// Every request passes here first: the Host header is checked (DNS rebinding), then the
/// credentials against what the path needs. 401 when credentials are missing or wrong, 403
/// when they are right but do not grant it, 429 after too many failures from one address.
/// Read endpoints get CORS headers; nothing else does.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = RelayRequestContext
    let access: Authorizer
    /// The stream a rendition's stream is made from: credentials for a stream (a user's grant,
    /// a token, a signed URL) open its renditions too, which are the same pictures.
    var parentOf: @Sendable (String) -> String? = { _ in nil }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let allowed = access.allowedHosts {
            let host = Self.hostName(request.head.authority ?? "")
            guard allowed.contains(host) else {
                return try HTTPResponses.jsonError(.misdirectedRequest, "host \"\(host.prefix(100))\" is not served here (server.allowed_hosts)")
            }
        }
        var need = AccessRequirement.of(method: request.method, path: request.uri.path)
        if let s = need.stream, let parent = parentOf(s) { need.stream = parent }
        var response = try await authorize(request, context: context, need: need, next: next)
        if need.cors && (request.method == .get || request.method == .head || request.method == .post || request.method == .delete) {
            response.headers[.accessControlAllowOrigin] = "*"
        }
        return response
    }

    private func authorize(_ request: Request, context: Context, need: AccessRequirement,
                           next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let action = need.action, access.isEnabled else { return try await next(request, context) }
        // A token in the query only where a player cannot add a header: media URLs.
        let credentials: Authorizer.Credentials
        if let header = request.headers[.authorization] {
            credentials = .header(header)
        } else if need.media, let token = request.uri.queryParameters["token"] {
            credentials = .token(String(token))
        } else if need.media, let stream = need.stream, let expires = request.uri.queryParameters["expires"],
                  let signature = request.uri.queryParameters["signature"] {
            credentials = .signedURL(stream: stream, expires: String(expires), signature: String(signature))
        } else {
            credentials = .none
        }
        var ctx = context
        switch await access.authorize(credentials, action, stream: need.stream, from: Self.clientKey(context.remoteAddress)) {
        case .limited:
            return try HTTPResponses.jsonError(.tooManyRequests, "too many failed logins from this address; try again later")
        case .unauthorized(let reason):
            return try Self.challenge(reason)
        case .forbidden(let identity):
            return try HTTPResponses.jsonError(.forbidden, "\(identity.name) may not \(action.rawValue)\(need.stream.map { " stream \"\($0.prefix(100))\"" } ?? " here")")
        case .allowed(let identity):
            ctx.identity = identity
        }
        return try await next(request, ctx)
    }

    static func challenge(_ message: String) throws -> Response {
        var r = try HTTPResponses.jsonError(.unauthorized, message)
        r.headers[.wwwAuthenticate] = "Basic realm=\"LiveRelay\", charset=\"UTF-8\""
        return r
    }

    /// `Host: example.org:8443` → `example.org`; `[::1]:8080` → `::1`.
    static func hostName(_ authority: String) -> String {
        var h = authority.lowercased()
        if h.hasPrefix("[") {
            if let close = h.firstIndex(of: "]") { h = String(h[h.index(after: h.startIndex)..<close]) }
            return h
        }
        if let colon = h.lastIndex(of: ":"), h.firstIndex(of: ":") == colon { h = String(h[..<colon]) }
        return h
    }

    static func clientKey(_ address: SocketAddress?) -> String {
        address?.ipAddress ?? "unknown"
    }
}
