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
            if file == "master.m3u8" {
                let q = request.uri.query.flatMap { $0.isEmpty ? nil : $0 }
                return try HLSMultivariant.response(engine: engine, name: name, query: q)
            }
            guard let hls = engine.hls(name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream or no HLS \"\(name)\"") }
            // An on-demand source connects for its players (the first request waits for a segment).
            let hub = engine.hubs[name]
            hub?.demand()
            let playlist = file == "index.m3u8", blocking = playlist && request.uri.queryParameters["_HLS_msn"] != nil
            // A player's first load of an on-demand stream that had stopped (a rendition nobody
            // watched): what is listed is stale, so it waits for the stream's new pictures, as
            // on a first start, rather than begin seconds or minutes behind.
            if playlist, !blocking, hub?.onDemandIdle != nil, hls.store.isStale(after: Double(hls.store.targetDuration) * 2 + 1) {
                await hls.store.waitForFreshContent(timeout: hls.store.settings.segmentDuration * 2 + 3)
            }
            // A blocking playlist request waits up to three target durations: capped per client.
            let client = AccessMiddleware.peer(context.remoteAddress)
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
            case .badRequest(let m): return try HLSCaching.uncached(HTTPResponses.jsonError(.badRequest, m))
            case .notYet: return try HLSCaching.uncached(HTTPResponses.jsonError(.notFound, "no segment yet: the source has not sent a keyframe"))
            case .playlist(var text):
                // A player that came with `?token=` or a signed URL (it cannot add a header)
                // needs them on every URI the playlist names too.
                let carried = ["token", "expires", "signature"].compactMap { key in
                    query[key[...]].flatMap { $0.isEmpty ? nil : key + "=" + Self.queryEscaped(String($0)) }
                }
                if !carried.isEmpty { text = HLSPlaylist.appendingQuery(carried.joined(separator: "&"), to: text) }
                headers[.contentType] = "application/vnd.apple.mpegurl"
                headers[.cacheControl] = HLSCaching.playlist(blocking: msn != nil, settings: store.settings, targetDuration: store.targetDuration)
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
            }
        }
        guard let (data, type) = await store.resource(file) else {
            let missing = try HTTPResponses.jsonError(.notFound, "no such segment, part or init segment: \"\(file)\"")
            // A hinted part the next keyframe overtook never comes: every player asking for it
            // can share one answer.
            return store.neverComing(file) ? HLSCaching.kept(missing, for: HLSCaching.partGoneSeconds(targetDuration: store.targetDuration))
                                           : HLSCaching.uncached(missing)
        }
        headers[.contentType] = type
        headers[.cacheControl] = HLSCaching.media(settings: store.settings, targetDuration: store.targetDuration)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// How long a cache in front (nginx's proxy_cache, a CDN) may keep each HLS answer, so that
/// LL-HLS works through it with the origin seeing each object about once:
/// - a segment, part or init segment never changes under its name while it is listed or
///   retired (its window and §6.2.2's time): public for that long, immutable;
/// - a blocking playlist request (`_HLS_msn`, `_HLS_part`) is answered once that part exists,
///   and that answer stays true for it: public, keyed by its query, for three target durations,
///   so that every player asking for the next part shares one origin request;
/// - a plain playlist request is the live edge: public for one second (LL-HLS players move to
///   blocking requests at once), half a target duration for classic HLS;
/// - a hinted part that the next keyframe overtook (it will never exist) is a 404 kept for three
///   target durations, so its players share one answer;
/// - any other error (a part not there yet, a request too far ahead) is never kept.
enum HLSCaching {
    static func media(settings: HLSSettings, targetDuration: Int) -> String {
        let window = max(1, targetDuration) * (settings.segmentCount + 3)
        return "public, max-age=\(window), immutable"
    }

    static func playlist(blocking: Bool, settings: HLSSettings, targetDuration: Int) -> String {
        if blocking { return "public, max-age=\(max(1, targetDuration) * 3)" }
        return settings.variant == .lowLatency ? "public, max-age=1" : "public, max-age=\(max(1, targetDuration / 2))"
    }

    static func partGoneSeconds(targetDuration: Int) -> Int { max(1, targetDuration) * 3 }

    static func kept(_ response: Response, for seconds: Int) -> Response {
        var r = response
        r.headers[.cacheControl] = "public, max-age=\(seconds)"
        return r
    }

    static func uncached(_ response: Response) -> Response {
        var r = response
        r.headers[.cacheControl] = "no-store"
        return r
    }
}
