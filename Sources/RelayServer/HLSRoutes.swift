import Hummingbird
import Relay
import NIOCore
import HTTPTypes
import Foundation

/// HLS: playlists (blocking reload, delta updates for LL-HLS), segments, parts, init segments.
enum HLSRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, limits: ClientLimits) {
        router.get("/streams/:name/hls/:file") { request, context in
            let name = try context.parameters.require("name")
            let file = try context.parameters.require("file")
            guard let hls = engine.hls(name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream or no HLS \"\(name)\"") }
            // An on-demand source connects for its players (the first request waits for a segment).
            engine.hubs[name]?.demand()
            // A blocking playlist request waits up to three target durations: capped per client.
            let blocking = file == "index.m3u8" && request.uri.queryParameters["_HLS_msn"] != nil
            let client = AccessMiddleware.clientKey(context.remoteAddress)
            if blocking {
                guard limits.acquire(.blockingRequests, client: client) else {
                    return try HTTPResponses.jsonError(.tooManyRequests, "this address already has \(limits.blockingRequests) playlist requests waiting (server.limits.per_client.blocking_requests)")
                }
            }
            defer { if blocking { limits.release(.blockingRequests, client: client) } }
            return try await hlsResponse(hls.store, file: file, query: request.uri.queryParameters)
        }
    }

    static func queryEscaped(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func hlsResponse(_ store: HLSStore, file: String, query: Hummingbird.Parameters) async throws -> Response {
        var headers = HTTPFields()
        if file == "index.m3u8" {
            func int(_ key: String) throws -> Int?? {
                guard let v = query[key[...]] else { return .some(nil) }
                guard let i = Int(v) else { return nil }
                return .some(i)
            }
            guard let msn = try int("_HLS_msn"), let part = try int("_HLS_part") else {
                return try HTTPResponses.jsonError(.badRequest, "_HLS_msn and _HLS_part must be whole numbers")
            }
            if part != nil && msn == nil { return try HTTPResponses.jsonError(.badRequest, "_HLS_part needs _HLS_msn") }
            // Delta updates: YES, or v2 (which adds date ranges; this playlist has none).
            let skipValue = query["_HLS_skip"[...]].map(String.init)
            if let v = skipValue, v != "YES", v != "v2" { return try HTTPResponses.jsonError(.badRequest, "_HLS_skip must be YES or v2") }
            var answer = await store.playlist(msn: msn, part: part, skip: skipValue != nil)
            if answer == .notYet {
                // The first segment is on its way: wait for it rather than fail the player.
                await store.waitForContent(timeout: store.settings.segmentDuration * 2 + 3)
                answer = await store.playlist(msn: nil, part: nil)
            }
            switch answer {
            case .badRequest(let m): return try HTTPResponses.jsonError(.badRequest, m)
            case .notYet: return try HTTPResponses.jsonError(.notFound, "no segment yet: the source has not sent a keyframe")
            case .playlist(var text):
                // A player that came with `?token=` (it cannot add a header) needs it on every
                // URI the playlist names too.
                if let token = query["token"[...]], !token.isEmpty { text = HLSPlaylist.appendingQuery("token=" + Self.queryEscaped(String(token)), to: text) }
                headers[.contentType] = "application/vnd.apple.mpegurl"
                headers[.cacheControl] = "no-cache"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
            }
        }
        guard let (data, type) = await store.resource(file) else {
            return try HTTPResponses.jsonError(.notFound, "no such segment, part or init segment: \"\(file)\"")
        }
        headers[.contentType] = type
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
