import Hummingbird
import Relay
import NIOCore
import HTTPTypes

/// The preview: MJPEG (newest image per viewer) and snapshots.
enum PreviewRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, limits: ClientLimits) {
        router.get("/streams/:name/snapshot.jpg") { _, context in
            let name = try context.parameters.require("name")
            guard let preview = engine.preview(name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream or no preview \"\(name)\"") }
            guard let image = await preview.snapshot(timeout: 5) else { return try HTTPResponses.jsonError(.serviceUnavailable, "no picture yet from \"\(name)\"") }
            var headers = HTTPFields()
            headers[.contentType] = "image/jpeg"
            headers[.cacheControl] = "no-store"
            if image.isSlate { headers[HTTPField.Name("X-LiveRelay-Signal")!] = "lost" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: image.jpeg)))
        }
        router.get("/streams/:name/preview.mjpg") { _, context in
            let name = try context.parameters.require("name")
            guard let preview = engine.preview(name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream or no preview \"\(name)\"") }
            let client = AccessMiddleware.peer(context.remoteAddress)
            guard limits.acquire(.viewers, client: client) else {
                return try HTTPResponses.jsonError(.tooManyRequests, "this address already holds \(limits.viewers) previews open (server.limits.per_client.viewers)")
            }
            var headers = HTTPFields()
            headers[.contentType] = "multipart/x-mixed-replace; boundary=liverelayframe"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { limits.release(.viewers, client: client) }
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
    }
}
