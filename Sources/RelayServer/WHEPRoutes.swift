import Access
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore
import Relay
import RelayAPI
import WebRTC

/// WHEP (draft-ietf-wish-whep) and WHIP (RFC 9725): `POST /streams/{name}/whep` with an SDP offer answers 201 with
/// the SDP answer and the session's `Location`; `DELETE` there ends it. The server is ICE-lite
/// and gathers nothing: a trickled candidate (`PATCH`) is not needed and is refused with 405.
/// `POST /streams/{name}/whip` takes a publisher's offer for a `source: publish` stream.
/// WHEP needs `read` on the stream, WHIP `publish`; a preflight (`OPTIONS`) is answered for players on other origins.
enum WHEPRoutes {
    static let maxOffer = 64 * 1024

    /// `name`'s H.264 fallback (`h264_fallback`), live: started on demand and waited for
    /// (its first picture comes at the source's next keyframe); nil when it has none or it did not start.
    static func h264Fallback(_ engine: RelayEngine, of name: String) async -> StreamHub? {
        guard let rung = engine.settings(name)?.renditions.first(where: \.isFallback),
              let hub = engine.hubs[RenditionSettings.streamName(name, rung.name)] else { return nil }
        return await started(hub)
    }

    /// `hub`, started on demand and waited for (at most 5 s); nil when it did not start.
    static func started(_ hub: StreamHub) async -> StreamHub? {
        for _ in 0..<50 {
            hub.demand()
            if hub.latestEpoch != nil { return hub }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, webrtc: WebRTCServer) {
        router.post("/streams/:name/whep") { request, context in
            let name = try context.parameters.require("name")
            guard var hub = engine.hubs[name] else {
                return try HTTPResponses.jsonError(.notFound, "no stream \"\(name.prefix(100))\"")
            }
            let type = request.headers[.contentType] ?? ""
            guard type.lowercased().hasPrefix("application/sdp") else {
                return try HTTPResponses.jsonError(.unsupportedMediaType, "a WHEP offer is application/sdp")
            }
            // `?stream=sub`: the camera's sub stream (`substream`), started for this viewer.
            switch request.uri.queryParameters.get("stream") {
            case nil, "main": break
            case Configuration.Substream.suffix:
                guard let sub = engine.hubs[Configuration.Substream.streamName(name)] else {
                    return try HTTPResponses.jsonError(.notFound, "stream \"\(name.prefix(100))\" has no sub stream (substream)")
                }
                guard let live = await started(sub) else {
                    let why = sub.currentStatus.lastError.map { ": " + $0 } ?? ""
                    return try HTTPResponses.jsonError(.serviceUnavailable, "the sub stream did not start within 5 s" + why)
                }
                hub = live
            case let other?:
                return try HTTPResponses.jsonError(.badRequest, "stream=\(other.prefix(20)): expected main or sub")
            }
            let body = try await request.body.collect(upTo: maxOffer)
            let offer = String(decoding: body.readableBytesView, as: UTF8.self)
            func answer(_ hub: StreamHub) throws(WebRTCServer.OfferError) -> Response {
                let (id, answer) = try webrtc.whep(offer: offer, hub: hub, viewer: context.identity?.name ?? "anonymous",
                                                   client: AccessMiddleware.peer(context.remoteAddress))
                return created(answer, location: "/streams/\(hub.name)/whep/\(id)", ice: webrtc.iceServers(for: context.identity?.name ?? "anonymous"))
            }
            do throws(WebRTCServer.OfferError) {
                return try answer(hub)
            } catch {
                // An offer without the source's codec (H.265 to a browser with no H.265 decoder):
                // the stream's H.264 fallback, started for it. Its session lives under that stream.
                guard case .noCommonCodec = error, let fallback = await h264Fallback(engine, of: name) else { return try refusal(error) }
                do throws(WebRTCServer.OfferError) {
                    return try answer(fallback)
                } catch {
                    return try refusal(error)
                }
            }
        }
        // WHIP (RFC 9725): a publisher's offer for a `source: publish` stream.
        router.post("/streams/:name/whip") { request, context in
            let name = try context.parameters.require("name")
            guard engine.publishPoints.streams.contains(name) else {
                return try HTTPResponses.jsonError(.notFound, "no stream \"\(name.prefix(100))\" takes publishers (source: publish)")
            }
            guard (request.headers[.contentType] ?? "").lowercased().hasPrefix("application/sdp") else {
                return try HTTPResponses.jsonError(.unsupportedMediaType, "a WHIP offer is application/sdp")
            }
            let body = try await request.body.collect(upTo: maxOffer)
            let offer = String(decoding: body.readableBytesView, as: UTF8.self)
            do throws(WebRTCServer.OfferError) {
                let (id, answer) = try webrtc.whip(offer: offer, stream: name, points: engine.publishPoints,
                                                   publisher: context.identity?.name ?? "anonymous",
                                                   client: AccessMiddleware.peer(context.remoteAddress))
                return created(answer, location: "/streams/\(name)/whip/\(id)", ice: webrtc.iceServers(for: context.identity?.name ?? "anonymous"))
            } catch {
                return try refusal(error)
            }
        }
        // The STUN and TURN servers a client should use, asked before it makes its offer (the
        // pages do): TURN credentials minted for the asker, under the same permission as the offer.
        for kind in ["whep", "whip"] {
            router.get(RouterPath("/streams/:name/\(kind)/ice-servers")) { _, context in
                let servers = webrtc.iceServers(for: context.identity?.name ?? "anonymous")
                var r = try HTTPResponses.json(ICEServerList(iceServers: servers.map { .init(urls: $0.urls, username: $0.username, credential: $0.credential) }))
                r.headers[.cacheControl] = "no-store"
                return r
            }
        }
        router.delete("/streams/:name/whip/:session") { _, context in
            let name = try context.parameters.require("name"), id = try context.parameters.require("session")
            guard webrtc.end(id: id, stream: name, kind: .whip) else { return try HTTPResponses.jsonError(.notFound, "no such WHIP session") }
            return Response(status: .ok)
        }
        router.delete("/streams/:name/whep/:session") { _, context in
            let name = try context.parameters.require("name"), id = try context.parameters.require("session")
            guard webrtc.end(id: id, stream: name, kind: .whep) else { return try HTTPResponses.jsonError(.notFound, "no such WHEP session") }
            return Response(status: .ok)
        }
        router.patch("/streams/:name/whip/:session") { _, _ in
            var r = try HTTPResponses.jsonError(.methodNotAllowed, "LiveRelay is ICE-lite: candidates are not trickled")
            r.headers[.allow] = "DELETE"
            return r
        }
        router.patch("/streams/:name/whep/:session") { _, _ in
            var r = try HTTPResponses.jsonError(.methodNotAllowed, "LiveRelay is ICE-lite: candidates are not trickled")
            r.headers[.allow] = "DELETE"
            return r
        }
        for path in ["/streams/:name/whep", "/streams/:name/whep/:session", "/streams/:name/whip", "/streams/:name/whip/:session"] {
            router.on(RouterPath(path), method: .options) { _, _ in preflight(methods: "POST, DELETE, OPTIONS") }
        }
    }

    /// A CORS preflight's answer for an offer endpoint (no credentials are needed to ask).
    static func preflight(methods: String) -> Response {
        var r = Response(status: .noContent)
        r.headers[.accessControlAllowOrigin] = "*"
        r.headers[.accessControlAllowMethods] = methods
        r.headers[.accessControlAllowHeaders] = "Authorization, Content-Type"
        r.headers[.accessControlExposeHeaders] = "Location"
        r.headers[.accessControlMaxAge] = "600"
        return r
    }

    static func created(_ answer: String, location: String, ice: [OfferedICEServer]) -> Response {
        var r = Response(status: .created, body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
        r.headers[.contentType] = "application/sdp"
        r.headers[.location] = location
        r.headers[.accessControlExposeHeaders] = "Location, Link"
        r.headers[.cacheControl] = "no-store"
        // RFC 9725 §4.6: the ICE servers, one Link each, with the credentials minted for this client.
        for v in ice.flatMap(\.linkValues) { r.headers.append(HTTPField(name: link, value: v)) }
        return r
    }

    static let link = HTTPField.Name("Link")!

    static func refusal(_ error: WebRTCServer.OfferError) throws -> Response {
        switch error {
        case .badOffer: return try HTTPResponses.jsonError(.badRequest, error.description)
        case .notLive:
            var r = try HTTPResponses.jsonError(.serviceUnavailable, error.description)
            r.headers[.retryAfter] = "1"
            return r
        case .noCommonCodec: return try HTTPResponses.jsonError(.notAcceptable, error.description)
        case .busy: return try HTTPResponses.jsonError(.conflict, error.description)
        case .notPublishable: return try HTTPResponses.jsonError(.notFound, error.description)
        case .tooMany: return try HTTPResponses.jsonError(.tooManyRequests, error.description)
        case .failed: return try HTTPResponses.jsonError(.internalServerError, error.description)
        }
    }
}
