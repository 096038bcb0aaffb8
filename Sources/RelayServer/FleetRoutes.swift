import Hummingbird
import HTTPTypes
import Relay

/// A fleet's HTTP face: `/api/fleet`, and the redirect of a stream's live media to the node
/// that reads it.
enum FleetRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.get("/api/fleet") { _, _ in
            guard let placement = engine.placement else { return try HTTPResponses.jsonError(.notFound, "this server is not a node of a fleet (catalog.postgres, node)") }
            do {
                return try HTTPResponses.json(try await placement.report())
            } catch {
                return try HTTPResponses.jsonError(.serviceUnavailable, "the fleet's catalog does not answer")
            }
        }
    }
}

/// HLS, snapshots and previews of a stream another node reads are answered there: 307 to the
/// same path and query on the owner (a signed URL or `?token=` goes along). Runs after the
/// access check, so that only those who may read the stream learn where it lives.
struct FleetRedirectMiddleware: RouterMiddleware {
    typealias Context = RelayRequestContext
    let engine: RelayEngine

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let placement = engine.placement, request.method == .get || request.method == .head,
              let stream = Self.redirectedStream(request.uri.path), let owner = placement.remoteOwner(of: stream) else {
            return try await next(request, context)
        }
        var headers = HTTPFields()
        headers[.location] = owner.url + request.uri.description
        // The owner may change (a node dies): a cache must not keep the redirect.
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-LiveRelay-Node")!] = owner.node
        return Response(status: .temporaryRedirect, headers: headers)
    }

    /// The stream of `/streams/NAME/hls/…`, `/streams/NAME/snapshot.jpg` and
    /// `/streams/NAME/preview.mjpg`; nil for every other path.
    static func redirectedStream(_ path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 3, parts[0] == "streams" else { return nil }
        switch parts[2] {
        case "hls" where parts.count == 4: return String(parts[1])
        case "snapshot.jpg", "preview.mjpg" where parts.count == 3: return String(parts[1])
        default: return nil
        }
    }
}
