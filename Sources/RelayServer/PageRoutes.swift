import Access
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore
import Relay
import RelayAPI

/// Files LiveRelay serves but does not make: hls.js, fetched by scripts/setup.sh into
/// /var/lib/liverelay/assets (or where LIVERELAY_ASSETS points). Read once.
enum Assets {
    static let directory = ProcessInfo.processInfo.environment["LIVERELAY_ASSETS"] ?? "/var/lib/liverelay/assets"
    static let hlsjs: [UInt8]? = FileManager.default.contents(atPath: directory + "/hls.mjs").map { [UInt8]($0) }
}

/// The pages: the operations page, one stream's viewer, a stream's metadata.
enum PageRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.get("/") { _, context in
            HTTPResponses.html(WallPage.render(engine: engine, visible: context.mayRead,
                                               admin: { context.may(.admin, stream: $0) }))
        }
        // The plain grid: one MJPEG <img> per stream (no WebSocket, no WebCodecs needed).
        router.get("/previews") { _, context in HTTPResponses.html(OpsPage.render(engine: engine, visible: context.mayRead)) }
        // One stream's single view, and its public page: the same facts, two pages.
        typealias Page = @Sendable (String, StreamStatus, StreamMeta?, Bool, String?, Bool, Bool) -> String
        func viewer(_ page: @escaping Page) -> @Sendable (Request, RelayRequestContext) async throws -> Response {
            { request, context in
                let name = try context.parameters.require("name")
                guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
                return HTTPResponses.html(page(name, hub.currentStatus, StreamMeta(engine: engine, name: name), Assets.hlsjs != nil, request.head.authority,
                                               engine.configuration.webrtc != nil, !(engine.configuration.webrtc?.iceServers.isEmpty ?? true)))
            }
        }
        router.get("/streams/:name", use: viewer(ViewerPage.render))
        // A browser publishes its camera by WHIP (source: publish streams; publish permission).
        router.get("/streams/:name/publish") { _, context in
            let name = try context.parameters.require("name")
            guard engine.publishPoints.streams.contains(name) else {
                return try HTTPResponses.jsonError(.notFound, "no stream \"\(name.prefix(100))\" takes publishers (source: publish)")
            }
            return HTTPResponses.html(PublishPage.render(name: name, iceServers: !(engine.configuration.webrtc?.iceServers.isEmpty ?? true)))
        }
        router.get("/streams/:name/watch", use: viewer(ViewerPage.watch))
        // hls.js for the public page: a copy setup fetched (never committed), served when present.
        router.get("/assets/hls.mjs") { _, _ in
            guard let bytes = Assets.hlsjs else { return try HTTPResponses.jsonError(.notFound, "no copy of hls.js here (scripts/setup.sh fetches one)") }
            var headers = HTTPFields()
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.cacheControl] = "max-age=3600"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        // How LiveRelay's pages keep hls.js at the live edge, for a page elsewhere (LiveEdgeScript).
        router.get("/assets/live-edge.js") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.cacheControl] = "no-cache" // an interface: a new release's copy at once
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: LiveEdgeScript.source)))
        }
        router.get("/streams/:name/meta.json") { _, context in
            let name = try context.parameters.require("name")
            guard let meta = StreamMeta(engine: engine, name: name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
            return try HTTPResponses.json(meta)
        }
    }
}
