import Foundation
import Hummingbird
import NIOCore
import Relay

/// HLS upload ingest: `PUT`/`POST /ingest/{stream}/{file}` (segments and playlists, as
/// `ffmpeg -f hls -method PUT` and phone reporter apps send them), for streams whose source is
/// `publish`. Needs the `publish` permission where auth is on.
enum IngestRoutes {
    static let maxUpload = 64 << 20

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        for method in [HTTPRequest.Method.put, .post] {
            router.on("/ingest/:stream/:file", method: method) { request, context in
                let stream = try context.parameters.require("stream")
                let file = try context.parameters.require("file")
                guard engine.publishPoints.streams.contains(stream) else {
                    return try HTTPResponses.jsonError(.notFound, "no stream \"\(stream.prefix(100))\" takes publishers (source: publish)")
                }
                guard file.count <= 200, !file.contains("/"), !file.hasPrefix(".") else {
                    return try HTTPResponses.jsonError(.badRequest, "bad file name")
                }
                let body = try await request.body.collect(upTo: maxUpload)
                switch await engine.hlsUploads.upload(stream: stream, file: file, body: Data(body.readableBytesView)) {
                case .accepted: return Response(status: .created)
                case .ignored(let why): return try HTTPResponses.jsonError(.unsupportedMediaType, why)
                case .refused(.alreadyPublishing): return try HTTPResponses.jsonError(.conflict, "\(stream) already has a publisher")
                case .refused(let r): return try HTTPResponses.jsonError(.serviceUnavailable, "cannot publish: \(r)")
                case .failed(let why): return try HTTPResponses.jsonError(.serviceUnavailable, why)
                }
            }
        }
    }
}
