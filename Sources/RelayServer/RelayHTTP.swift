public import Hummingbird
public import Relay
import Foundation
import MediaCore
import NIOCore
import HTTPTypes
import Prometheus

/// LiveRelay's HTTP face: API, preview (MJPEG, snapshot), metrics, health and the ops page.
public enum RelayHTTP {
    public static func router(engine: RelayEngine, metrics: RelayMetrics) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/") { _, _ in html(OpsPage.render(engine: engine)) }
        router.get("/api/streams") { _, _ in
            try json(engine.hubs.keys.sorted().map { StreamView(hub: engine.hubs[$0]!, preview: engine.previews[$0], engine: engine) })
        }
        router.get("/api/streams/:name") { _, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try jsonError(.notFound, "unknown stream \"\(name)\"") }
            return try json(StreamView(hub: hub, preview: engine.previews[name], engine: engine))
        }
        router.patch("/api/streams/:name/sinks/:sink") { request, context in
            let name = try context.parameters.require("name")
            let sink = try context.parameters.require("sink")
            guard let hub = engine.hubs[name] else { return try jsonError(.notFound, "unknown stream \"\(name)\"") }
            guard let current = hub.frameSink(sink)?.policy ?? hub.packetSink(sink)?.policy else {
                return try jsonError(.notFound, "stream \"\(name)\" has no sink \"\(sink)\"")
            }
            let body = try await request.body.collect(upTo: 64 * 1024)
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
                return try jsonError(.badRequest, "expected a JSON object such as {\"ordering\":\"arrival\",\"freshness\":\"latest\",\"depth\":1}")
            }
            switch PolicyPatch.apply(object, to: current) {
            case .failure(let error): return try jsonError(.badRequest, error.message)
            case .success(let policy):
                _ = hub.setPolicy(policy, forSink: sink)
                return try json(StreamView(hub: hub, preview: engine.previews[name], engine: engine))
            }
        }
        router.get("/metrics") { _, _ in
            metrics.update(engine: engine)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.registry.emitToString())))
        }
        router.get("/streams/:name") { _, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try jsonError(.notFound, "unknown stream \"\(name)\"") }
            return html(ViewerPage.render(name: name, status: hub.currentStatus))
        }
        router.get("/streams/:name/snapshot.jpg") { _, context in
            let name = try context.parameters.require("name")
            guard let preview = engine.previews[name] else { return try jsonError(.notFound, "unknown stream or no preview \"\(name)\"") }
            guard let image = await preview.snapshot(timeout: 5) else { return try jsonError(.serviceUnavailable, "no picture yet from \"\(name)\"") }
            var headers = HTTPFields()
            headers[.contentType] = "image/jpeg"
            headers[.cacheControl] = "no-store"
            if image.isSlate { headers[HTTPField.Name("X-LiveRelay-Signal")!] = "lost" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: image.jpeg)))
        }
        router.get("/streams/:name/preview.mjpg") { _, context in
            let name = try context.parameters.require("name")
            guard let preview = engine.previews[name] else { return try jsonError(.notFound, "unknown stream or no preview \"\(name)\"") }
            var headers = HTTPFields()
            headers[.contentType] = "multipart/x-mixed-replace; boundary=liverelayframe"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                var seen: UInt64 = 0
                // Each viewer takes the newest image whenever its socket takes a write: a slow
                // viewer skips images, it never delays another.
                while let image = await preview.next(after: seen) {
                    seen = image.sequence
                    var part = ByteBuffer(string: "--liverelayframe\r\nContent-Type: image/jpeg\r\nContent-Length: \(image.jpeg.count)\r\n\r\n")
                    part.writeBytes(image.jpeg)
                    part.writeString("\r\n")
                    try await writer.write(part)
                }
                try await writer.finish(nil)
            })
        }
        router.get("/streams/:name/meta.json") { _, context in
            let name = try context.parameters.require("name")
            guard let meta = StreamMeta(engine: engine, name: name) else { return try jsonError(.notFound, "unknown stream \"\(name)\"") }
            return try json(meta)
        }
        router.get("/streams/:name/hls/:file") { request, context in
            let name = try context.parameters.require("name")
            let file = try context.parameters.require("file")
            guard let hls = engine.hls[name] else { return try jsonError(.notFound, "unknown stream or no HLS \"\(name)\"") }
            return try await hlsResponse(hls.store, file: file, query: request.uri.queryParameters)
        }
        return router
    }

    static func hlsResponse(_ store: HLSStore, file: String, query: Hummingbird.Parameters) async throws -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        if file == "index.m3u8" {
            func int(_ key: String) throws -> Int?? {
                guard let v = query[key[...]] else { return .some(nil) }
                guard let i = Int(v) else { return nil }
                return .some(i)
            }
            guard let msn = try int("_HLS_msn"), let part = try int("_HLS_part") else {
                return try jsonError(.badRequest, "_HLS_msn and _HLS_part must be whole numbers")
            }
            if part != nil && msn == nil { return try jsonError(.badRequest, "_HLS_part needs _HLS_msn") }
            // Delta updates: YES, or v2 (which adds date ranges; this playlist has none).
            let skipValue = query["_HLS_skip"[...]].map(String.init)
            if let v = skipValue, v != "YES", v != "v2" { return try jsonError(.badRequest, "_HLS_skip must be YES or v2") }
            var answer = await store.playlist(msn: msn, part: part, skip: skipValue != nil)
            if answer == .notYet {
                // The first segment is on its way: wait for it rather than fail the player.
                await store.waitForContent(timeout: store.settings.segmentDuration * 2 + 3)
                answer = await store.playlist(msn: nil, part: nil)
            }
            switch answer {
            case .badRequest(let m): return try jsonError(.badRequest, m)
            case .notYet: return try jsonError(.notFound, "no segment yet: the source has not sent a keyframe")
            case .playlist(let text):
                headers[.contentType] = "application/vnd.apple.mpegurl"
                headers[.cacheControl] = "no-cache"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
            }
        }
        guard let (data, type) = await store.resource(file) else {
            return try jsonError(.notFound, "no such segment, part or init segment: \"\(file)\"")
        }
        headers[.contentType] = type
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func jsonError(_ status: HTTPResponse.Status, _ message: String) throws -> Response {
        try json(["error": message], status: status)
    }

    static func html(_ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A stream's metadata: `GET /streams/{name}/meta.json`.
struct StreamMeta: Encodable {
    var name: String
    var title: String?
    var description: String?
    var keywords: [String]
    var preview: String?
    var hls: String?

    init?(engine: RelayEngine, name: String) {
        guard let s = engine.configuration.streams.first(where: { $0.name == name }) else { return nil }
        self.name = name
        title = s.title
        description = s.description
        keywords = s.keywords
        preview = engine.previews[name] != nil ? "/streams/\(name)/preview.mjpg" : nil
        hls = engine.hls[name] != nil ? "/streams/\(name)/hls/index.m3u8" : nil
    }
}

/// A PATCH body applied to a sink's policy.
enum PolicyPatch {
    static func apply(_ object: [String: Any], to current: SinkPolicy) -> Result<SinkPolicy, PatchError> {
        let allowed: Set<String> = ["ordering", "freshness", "depth", "max_age_ms"]
        if let unknown = object.keys.first(where: { !allowed.contains($0) }) {
            return .failure(PatchError("unknown key \"\(unknown)\" (expected ordering, freshness, depth, max_age_ms)"))
        }
        var policy = current
        if let o = object["ordering"] {
            guard let s = o as? String, let v = Ordering(rawValue: s) else { return .failure(PatchError("ordering: expected arrival or presentation")) }
            policy.ordering = v
        }
        let depth = object["depth"] as? Int
        if object["depth"] != nil, (depth ?? 0) < 1 { return .failure(PatchError("depth: expected a whole number from 1")) }
        let maxAge = object["max_age_ms"] as? Int
        if object["max_age_ms"] != nil, (maxAge ?? 0) < 1 { return .failure(PatchError("max_age_ms: expected a whole number of milliseconds from 1")) }
        let name = object["freshness"].map { $0 as? String } ?? policy.freshness.name
        switch name {
        case "latest": policy.freshness = .latest(count: depth ?? { if case .latest(let n) = current.freshness { n } else { 1 } }())
        case "max_age": policy.freshness = .maxAge(milliseconds: maxAge ?? { if case .maxAge(let ms) = current.freshness { ms } else { 250 } }())
        case "lossless": policy.freshness = .lossless(capacity: depth ?? { if case .lossless(let c) = current.freshness { c } else { 64 } }())
        default: return .failure(PatchError("freshness: expected latest, max_age or lossless"))
        }
        return .success(policy)
    }

    struct PatchError: Error { let message: String; init(_ m: String) { message = m } }
}


/// The API's view of a stream and its sinks.
struct StreamView: Encodable {
    struct Sink: Encodable {
        var name: String
        var kind: String
        var ordering: String
        var freshness: String
        var depth: Int?
        var maxAgeMs: Int?
        var queueDepth: Int
        var received: Int
        var delivered: Int
        var outOfOrder: Int
        var dropped: [String: Int]
        var arrivalToDelivered: LatencySummary
        var captureToDelivered: LatencySummary
    }
    var stream: StreamStatus
    var sinks: [Sink]
    var meta: StreamMeta?
    var forwards: [ForwardStatus]
    var recordings: [String]
    var hls: HLSView?

    struct HLSView: Encodable {
        var variant: String
        var url: String
        var mediaSequence: Int
        var segments: Int
        var targetDuration: Int
        var ended: Bool
        /// Last frame arrived → its part (LL-HLS) or segment listed.
        var availability: LatencySummary
    }

    init(hub: StreamHub, preview: PreviewService?, engine: RelayEngine? = nil) {
        stream = hub.currentStatus
        meta = engine.flatMap { StreamMeta(engine: $0, name: hub.name) }
        forwards = engine?.forwarders[hub.name]?.map(\.currentStatus) ?? []
        recordings = engine?.recorders[hub.name]?.recordedFiles ?? []
        hls = engine?.hls[hub.name].map { h in
            let p = h.store.snapshot
            return HLSView(variant: h.store.settings.variant.rawValue, url: "/streams/\(hub.name)/hls/index.m3u8", mediaSequence: p.mediaSequence,
                           segments: p.complete.count, targetDuration: p.targetDuration, ended: p.ended, availability: h.store.availability.summary)
        }
        sinks = hub.sinkNames.compactMap { name in
            if let q = hub.frameSink(name) { return Self.sink(name, kind: name == "preview" ? "preview" : "frames", q.policy, q.depth, q.counters, q.deliveredLatency, q.captureLatency) }
            if let q = hub.packetSink(name) { return Self.sink(name, kind: name == HLSSegmenter.sinkName ? "hls" : (name == "record" ? "record" : (name.hasPrefix("forward") ? "forward" : "packets")), q.policy, q.depth, q.counters, q.deliveredLatency, q.captureLatency) }
            return nil
        }
    }

    static func sink(_ name: String, kind: String, _ p: SinkPolicy, _ depth: Int, _ c: SinkCounters, _ d: LatencyHistogram, _ cap: LatencyHistogram) -> Sink {
        var n: Int? = nil, age: Int? = nil
        switch p.freshness {
        case .latest(let x): n = x
        case .lossless(let x): n = x
        case .maxAge(let ms): age = ms
        }
        return Sink(name: name, kind: kind, ordering: p.ordering.rawValue, freshness: p.freshness.name, depth: n, maxAgeMs: age,
                    queueDepth: depth, received: c.received, delivered: c.delivered, outOfOrder: c.outOfOrder, dropped: c.dropped,
                    arrivalToDelivered: d.summary, captureToDelivered: cap.summary)
    }
}
