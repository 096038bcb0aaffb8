import Hummingbird
import HTTPTypes
import NIOCore
import NIOPosix
import Relay
import Wire
import Foundation
import Logging

/// The archive played and exported (`playback`), without re-encoding: an HLS VOD playlist over
/// the recording's own files, the files by byte range, and one MP4 clip of a range with its
/// manifest beside it.
enum RecordingPlaybackRoutes {
    /// The longest range one playlist or clip covers.
    static let longestRange = 86_400.0

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, cache: RecordedFileIndexCache) {
        // GET /streams/{name}/recording.m3u8?start=…&end=… (default: the last hour).
        router.get("/streams/:name/recording.m3u8") { request, context in
            let name = try context.parameters.require("name")
            let q = request.uri.queryParameters
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog: recordings are not indexed") }
            let range: (Date, Date)
            switch span(q, defaultLength: 3600) { case .success(let r): range = r; case .failure(let e): return try HTTPResponses.jsonError(.badRequest, e.message) }
            let selection = try await select(catalog: catalog, stream: name, range, cache: cache, logger: context.logger)
            guard !selection.fragments.isEmpty else { return try HTTPResponses.jsonError(.notFound, "nothing of \(name) recorded in that range") }
            await catalog.audit(RecordingRoutes.audit(.playback, context, stream: name, range, detail: "recording.m3u8"), logger: context.logger)
            var text = RecordingPlaylist.make(selection) { "recording/\($0)" }
            if let token = q["token"], !token.isEmpty {
                text = HLSPlaylist.appendingQuery("token=" + HLSRoutes.queryEscaped(String(token)), to: text)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/vnd.apple.mpegurl"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        // A catalogued file of the stream, by name, with Range (the playlist's byte ranges).
        router.get("/streams/:name/recording/:file") { request, context in
            let name = try context.parameters.require("name"), file = try context.parameters.require("file")
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog: recordings are not indexed") }
            guard file.utf8.count <= 255, let segment = try await catalog.segment(stream: name, file: file) else {
                return try HTTPResponses.jsonError(.notFound, "no recording \(file.prefix(255)) of \(name)")
            }
            guard let size = (try? FileManager.default.attributesOfItem(atPath: segment.path))?[.size] as? NSNumber else {
                return try HTTPResponses.jsonError(.gone, "the file of \(file) is gone")
            }
            return ranged(request, length: size.intValue, type: "video/mp4", immutable: true) { range, emit in
                var at = range.lowerBound
                while at < range.upperBound {
                    let n = min(256 << 10, range.upperBound - at)
                    let from = at
                    guard let b = try await NIOThreadPool.singleton.runIfActive({ RecordingExport.read(path: segment.path, offset: from, count: n) })
                    else { return false }
                    try await emit(b)
                    at += n
                }
                return true
            }
        }
        // GET /streams/{name}/recording.mp4?start=…&duration=… : one MP4, Range answered.
        router.get("/streams/:name/recording.mp4") { request, context in
            let name = try context.parameters.require("name")
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog: recordings are not indexed") }
            let export: RecordingExport
            switch try await exportOf(request, catalog: catalog, stream: name, cache: cache, logger: context.logger) {
            case .success(let e): export = e.0
            case .failure(let r): return r.response
            }
            // One line per download: the request that begins at the clip's first byte.
            if case .part(let r) = ByteRange.parse(request.headers[.range].map { Substring($0) }, length: export.length), r.lowerBound > 0 {} else {
                await catalog.audit(RecordingRoutes.audit(.export, context, stream: name, (export.selection.start ?? Date(), export.selection.end ?? Date()),
                                                          detail: "recording.mp4, \(export.length) bytes"), logger: context.logger)
            }
            return ranged(request, length: export.length, type: "video/mp4", immutable: false,
                          disposition: "attachment; filename=\"\(name)-\(compact(export.selection.start ?? Date())).mp4\"") { range, emit in
                try await export.write(range, offload: { work in try await NIOThreadPool.singleton.runIfActive(work) }) { try await emit($0) }
            }
        }
        // GET /streams/{name}/recording.json?start=…&duration=… : the clip's manifest.
        router.get("/streams/:name/recording.json") { request, context in
            let name = try context.parameters.require("name")
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog: recordings are not indexed") }
            let export: RecordingExport, asked: (Date, Date)
            switch try await exportOf(request, catalog: catalog, stream: name, cache: cache, logger: context.logger) {
            case .success(let e): (export, asked) = e
            case .failure(let r): return r.response
            }
            let node = ProcessInfo.processInfo.hostName
            // Hashing reads the whole clip once: off the event loop.
            guard let manifest = try await NIOThreadPool.singleton.runIfActive({
                ExportManifest.make(export, stream: name, node: node, requestedStart: asked.0, requestedDuration: asked.1.timeIntervalSince(asked.0))
            }) else { return try HTTPResponses.jsonError(.gone, "a file of the range went while the manifest was made") }
            await catalog.audit(RecordingRoutes.audit(.manifest, context, stream: name, (manifest.start, manifest.end),
                                                      detail: "recording.json, clip sha256 \(manifest.sha256)"), logger: context.logger)
            return try HTTPResponses.json(manifest)
        }
    }

    struct Refusal: Error { var response: Response }

    /// The clip a request asks for (`start`, and `duration` seconds or `end`).
    static func exportOf(_ request: Request, catalog: any CatalogStore, stream: String,
                         cache: RecordedFileIndexCache, logger: Logger) async throws -> Result<(RecordingExport, (Date, Date)), Refusal> {
        let q = request.uri.queryParameters
        let range: (Date, Date)
        switch span(q, defaultLength: nil) {
        case .success(let r): range = r
        case .failure(let e): return .failure(Refusal(response: try HTTPResponses.jsonError(.badRequest, e.message)))
        }
        let selection = try await select(catalog: catalog, stream: stream, range, cache: cache, logger: logger)
        guard let export = RecordingExport(selection, length: range.1.timeIntervalSince(range.0)) else {
            return .failure(Refusal(response: try HTTPResponses.jsonError(.notFound, "nothing of \(stream) recorded in that range")))
        }
        return .success((export, range))
    }

    struct QueryProblem: Error { var message: String }

    /// `start` and `end` (RFC 3339) or `start` and `duration` (seconds); without `start`, the
    /// last `defaultLength` seconds (nil: `start` is required).
    static func span(_ q: Hummingbird.Parameters, defaultLength: Double?) -> Result<(Date, Date), QueryProblem> {
        let usage = "start and end are RFC 3339 times (2026-11-25T14:32:00Z), duration is seconds"
        var start: Date?
        if let s = q["start"] { guard let t = RecordingRoutes.time(s) else { return .failure(QueryProblem(message: usage)) }; start = t }
        var end: Date?
        if let e = q["end"] { guard let t = RecordingRoutes.time(e) else { return .failure(QueryProblem(message: usage)) }; end = t }
        if let d = q["duration"] {
            guard let seconds = PeerNumber.decimal(d, in: 0.001...longestRange), let s = start else { return .failure(QueryProblem(message: usage)) }
            end = s.addingTimeInterval(seconds)
        }
        // Without an end: `defaultLength` (a clip: 60 s) after the start, or now.
        let last = end ?? start.map { $0.addingTimeInterval(defaultLength ?? 60) } ?? Date()
        guard let first = start ?? defaultLength.map({ last.addingTimeInterval(-$0) }) else {
            return .failure(QueryProblem(message: "start is required; " + usage))
        }
        guard first < last else { return .failure(QueryProblem(message: "start must be before end")) }
        guard last.timeIntervalSince(first) <= longestRange else { return .failure(QueryProblem(message: "at most 24 hours at once")) }
        return .success((first, last))
    }

    static func select(catalog: any CatalogStore, stream: String, _ range: (Date, Date), cache: RecordedFileIndexCache,
                       logger: Logger) async throws -> RecordingSelection {
        // A fragment up to a GOP before the start is taken (the keyframe at or before it): the
        // segment holding it starts before the range.
        let segments = try await catalog.indexedSegments(stream: stream, from: range.0, to: range.1)
        let selection = try await NIOThreadPool.singleton.runIfActive {
            RecordingSelection.select(segments, from: range.0, to: range.1, cache: cache)
        }
        // A catalogued file that cannot be read is left out of what is played, and said.
        for p in selection.problems { logger.warning("record: a catalogued file is left out of playback", metadata: ["stream.name": "\(stream)", "problem": "\(p)"]) }
        return selection
    }

    static func compact(_ d: Date) -> String {
        HLSPlaylist.iso8601(d).utf8.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: ":") }.reduce(into: "") { $0.append(Character(UnicodeScalar($1))) }
    }

    /// A body of `length` bytes, whole (200) or the one range asked for (206), or 416.
    static func ranged(_ request: Request, length: Int, type: String, immutable: Bool, disposition: String? = nil,
                       write: @escaping @Sendable (Range<Int>, ([UInt8]) async throws -> Void) async throws -> Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = immutable ? "private, max-age=31536000, immutable" : "no-store"
        if let disposition { headers[.contentDisposition] = disposition }
        let range: Range<Int>
        var status = HTTPResponse.Status.ok
        switch ByteRange.parse(request.headers[.range].map { Substring($0) }, length: length) {
        case .whole:
            range = 0..<length
        case .part(let r):
            range = r
            status = .partialContent
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(length)"
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(length)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        if request.method == .head {
            headers[.contentLength] = "\(range.count)"
            return Response(status: status, headers: headers)
        }
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: range.count) { writer in
            let whole = try await write(range) { try await writer.write(ByteBuffer(bytes: $0)) }
            // A file went under us: the answer is cut short (the client sees fewer bytes than
            // its Content-Length), never padded.
            guard whole else { throw HTTPError(.gone) }
            try await writer.finish(nil)
        })
    }
}
