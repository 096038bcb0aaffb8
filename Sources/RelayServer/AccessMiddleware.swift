import Access
import Hummingbird
import HTTPTypes
import NIOCore
import Relay

/// Every request passes here first: the Host header is checked (DNS rebinding), then the
/// authorizer decides what the path needs. 401 when credentials are missing or wrong, 403
/// when they are right but do not grant it, 429 after too many failures of the same user (or
/// token) from one client. Read endpoints get CORS headers; nothing else does.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = RelayRequestContext
    let access: Authorizer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let allowed = access.allowedHosts {
            let host = Self.hostName(request.head.authority ?? "")
            guard allowed.contains(host) else {
                return try HTTPResponses.jsonError(.misdirectedRequest, "host \"\(host.prefix(100))\" is not served here (server.allowed_hosts)")
            }
        }
        let need = AccessRequirement.of(method: request.method, path: request.uri.path)
        var response = try await authorize(request, context: context, need: need, next: next)
        if need.cors && (request.method == .get || request.method == .head || request.method == .post || request.method == .delete) {
            response.headers[.accessControlAllowOrigin] = "*"
        }
        return response
    }

    private func authorize(_ request: Request, context: Context, need: AccessRequirement,
                           next: (Request, Context) async throws -> Response) async throws -> Response {
        var ctx = context
        ctx.authorizer = access
        guard let action = need.action else { return try await next(request, ctx) }
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
        let asked = AccessRequest(credentials, action, stream: need.stream, door: need.door, peer: Self.peer(context.remoteAddress),
                                  forwardedFor: request.headers[.xForwardedFor])
        switch await access.authorize(asked) {
        case .limited:
            return try HTTPResponses.jsonError(.tooManyRequests, "too many failed logins for these credentials from this address; try again later")
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

    /// The address the connection came from (the authorizer decides whom it stands for).
    static func peer(_ address: SocketAddress?) -> String {
        address?.ipAddress ?? "unknown"
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
