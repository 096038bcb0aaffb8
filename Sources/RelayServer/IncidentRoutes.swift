import Access
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import Relay
import RelayAPI
import Wire
import Foundation

/// Bookmarks, incidents and their evidence bundle, and the node's signing key.
///
/// The access check lets a request in on the action alone (`incident` to make and change,
/// `playback` to view, `export` to export); each handler then asks the same of every stream the
/// request names, so a user who may play back only `lobby*` sees only incidents of those.
enum IncidentRoutes {
    struct BookmarkRequest: Decodable {
        var stream: String
        var time: String?
        var note: String?
    }

    struct IncidentRequest: Decodable {
        var title: String?
        var notes: String?
        var streams: [String]?
        var start: String?
        var end: String?
        var state: Incident.State?
    }

    /// The longest incident: a day, as the longest clip.
    static let longestIncident = RecordingPlaybackRoutes.longestRange
    static let longestText = 10_000

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, key: NodeKey) {
        router.get("/api/keys") { _, _ in
            try HTTPResponses.json(NodeKeys(node: ProcessInfo.processInfo.hostName,
                                            keys: [.init(algorithm: "Ed25519", id: key.id, publicKey: key.publicKey)]))
        }

        router.post("/api/bookmarks") { request, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let data = try await request.body.collect(upTo: 16 * 1024)
            guard let body = try? JSONDecoder().decode(BookmarkRequest.self, from: Data(data.readableBytesView)) else {
                return try HTTPResponses.jsonError(.badRequest, "expected {\"stream\": name, \"time\": RFC 3339 (default: now), \"note\": text}")
            }
            if let problem = await unknownStreams([body.stream], engine: engine, catalog: catalog) { return try HTTPResponses.jsonError(.badRequest, problem) }
            guard context.may(.incident, stream: body.stream) else { return try HTTPResponses.jsonError(.forbidden, "no incident permission on \(body.stream)") }
            var time = Date()
            if let t = body.time {
                guard let parsed = RecordingRoutes.time(Substring(t)) else { return try HTTPResponses.jsonError(.badRequest, "time: an RFC 3339 time") }
                time = parsed
            }
            let note = body.note ?? ""
            guard note.utf8.count <= longestText else { return try HTTPResponses.jsonError(.badRequest, "note: at most \(longestText) bytes") }
            let mark = try await catalog.addBookmark(Bookmark(stream: body.stream, time: time, note: note, who: who(context)))
            await catalog.audit(RecordingRoutes.audit(.bookmark, context, stream: mark.stream, (time, time), detail: "bookmark \(mark.id): \(note.prefix(200))"),
                                logger: context.logger)
            return try HTTPResponses.json(mark, status: .created)
        }

        router.get("/api/bookmarks") { request, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let q = request.uri.queryParameters
            let range: (Date, Date)
            switch searchRange(q) { case .success(let r): range = r; case .failure(let e): return try HTTPResponses.jsonError(.badRequest, e.message) }
            let stream = q["stream"].map(String.init)
            if let stream, !context.may(.playback, stream: stream) { return try HTTPResponses.jsonError(.forbidden, "no playback permission on \(stream)") }
            let marks = try await catalog.bookmarks(stream: stream, from: range.0, to: range.1, limit: 10_000)
            return try HTTPResponses.json(marks.filter { context.may(.playback, stream: $0.stream) })
        }

        router.post("/api/incidents") { request, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let body: IncidentRequest
            switch try await decode(request) { case .success(let b): body = b; case .failure(let r): return r.response }
            guard let title = body.title, let streams = body.streams, let s = body.start, let e = body.end else {
                return try HTTPResponses.jsonError(.badRequest, "expected {\"title\", \"streams\": [names], \"start\": RFC 3339, \"end\": RFC 3339, \"notes\"}")
            }
            var incident = Incident(title: title, notes: body.notes ?? "", streams: streams, start: .distantPast, end: .distantPast, createdBy: who(context))
            if let problem = set(&incident, start: s, end: e) { return try HTTPResponses.jsonError(.badRequest, problem) }
            if let problem = check(incident) { return try HTTPResponses.jsonError(.badRequest, problem) }
            if let problem = await unknownStreams(streams, engine: engine, catalog: catalog) { return try HTTPResponses.jsonError(.badRequest, problem) }
            if let denied = streams.first(where: { !context.may(.incident, stream: $0) }) {
                return try HTTPResponses.jsonError(.forbidden, "no incident permission on \(denied)")
            }
            incident = try await catalog.addIncident(incident)
            try await hold(incident, catalog: catalog)
            for stream in incident.streams {
                await catalog.audit(RecordingRoutes.audit(.incident, context, stream: stream, (incident.start, incident.end),
                                                          detail: "incident \(incident.id) made: \(incident.title.prefix(200))"), logger: context.logger)
            }
            return try HTTPResponses.json(incident, status: .created)
        }

        router.get("/api/incidents") { request, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let q = request.uri.queryParameters
            let range: (Date, Date)
            switch searchRange(q) { case .success(let r): range = r; case .failure(let e): return try HTTPResponses.jsonError(.badRequest, e.message) }
            var limit = 100
            if let l = q["limit"] {
                guard let n = PeerNumber.integer(l, in: 1...10_000) else { return try HTTPResponses.jsonError(.badRequest, "limit: 1 to 10000") }
                limit = n
            }
            let text = q["q"].map(String.init)
            guard (text?.utf8.count ?? 0) <= 1000 else { return try HTTPResponses.jsonError(.badRequest, "q: at most 1000 bytes") }
            let found = try await catalog.incidents(from: range.0, to: range.1, limit: 100_000)
                .filter { $0.matches(from: nil, to: nil, stream: q["stream"].map(String.init), text: text) && $0.streams.allSatisfy { context.may(.playback, stream: $0) } }
            return try HTTPResponses.json(Array(found.prefix(limit)))
        }

        router.get("/api/incidents/:id") { _, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let incident: Incident
            switch try await find(context, catalog: catalog, needing: .playback) { case .success(let i): incident = i; case .failure(let r): return r.response }
            let marks = try await bookmarks(of: incident, catalog: catalog)
            for stream in incident.streams {
                await catalog.audit(RecordingRoutes.audit(.incident, context, stream: stream, (incident.start, incident.end),
                                                          detail: "incident \(incident.id) viewed"), logger: context.logger)
            }
            return try HTTPResponses.json(IncidentView(incident: incident, bookmarks: marks))
        }

        router.patch("/api/incidents/:id") { request, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            var incident: Incident
            switch try await find(context, catalog: catalog, needing: .incident) { case .success(let i): incident = i; case .failure(let r): return r.response }
            let body: IncidentRequest
            switch try await decode(request) { case .success(let b): body = b; case .failure(let r): return r.response }
            let before = incident
            var changed: [String] = []
            if let t = body.title { incident.title = t; changed.append("title") }
            if let n = body.notes { incident.notes = n; changed.append("notes") }
            if let s = body.streams { incident.streams = s; changed.append("streams") }
            if body.start != nil || body.end != nil {
                if let problem = set(&incident, start: body.start, end: body.end) {
                    return try HTTPResponses.jsonError(.badRequest, problem)
                }
                changed.append("range")
            }
            if let state = body.state { incident.state = state; changed.append("state \(state.rawValue)") }
            guard !changed.isEmpty else { return try HTTPResponses.jsonError(.badRequest, "nothing to change: title, notes, streams, start, end, state") }
            if let problem = check(incident) { return try HTTPResponses.jsonError(.badRequest, problem) }
            if body.streams != nil, let problem = await unknownStreams(incident.streams, engine: engine, catalog: catalog) {
                return try HTTPResponses.jsonError(.badRequest, problem)
            }
            if let denied = incident.streams.first(where: { !context.may(.incident, stream: $0) }) {
                return try HTTPResponses.jsonError(.forbidden, "no incident permission on \(denied)")
            }
            incident.updated = Date()
            guard try await catalog.updateIncident(incident) else { return try HTTPResponses.jsonError(.notFound, "no incident \(incident.id)") }
            try await release(before, catalog: catalog)
            try await hold(incident, catalog: catalog)
            for stream in Set(before.streams + incident.streams).sorted() {
                await catalog.audit(RecordingRoutes.audit(.incident, context, stream: stream, (incident.start, incident.end),
                                                          detail: "incident \(incident.id) changed: \(changed.joined(separator: ", "))"), logger: context.logger)
            }
            return try HTTPResponses.json(incident)
        }

        // The incident reviewed in step: its page (the page's script reads the incident, its
        // spans and its recordings through the API, with the viewer's own credentials).
        router.get("/incidents/:id") { _, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            switch try await find(context, catalog: catalog, needing: .playback) {
            case .success(let incident): return HTTPResponses.html(IncidentPage.render(id: incident.id))
            case .failure(let r): return r.response
            }
        }

        router.get("/api/incidents/:id/export") { _, context in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let incident: Incident
            switch try await find(context, catalog: catalog, needing: .export) { case .success(let i): incident = i; case .failure(let r): return r.response }
            var cameras: [EvidenceBundle.Camera] = []
            let cache = RecordedFileIndexCache()
            for stream in incident.streams {
                let selection = try await RecordingPlaybackRoutes.select(catalog: catalog, stream: stream, (incident.start, incident.end), cache: cache, logger: context.logger)
                let export = RecordingExport(selection, length: incident.end.timeIntervalSince(incident.start))
                var previous: [String: String] = [:]
                if let export {
                    // The chain value before each segment of the clip, so that its links are checked offline.
                    let wanted = Set(export.selection.fragments.map(\.segment.path))
                    var last = ""
                    for s in try await catalog.chain(stream: stream) {
                        if wanted.contains(s.path) { previous[s.path] = last }
                        last = s.chain
                    }
                }
                cameras.append(EvidenceBundle.Camera(stream: stream, export: export, previousChains: previous))
            }
            let marks = try await bookmarks(of: incident, catalog: catalog)
            // The audit excerpt: what was done to these streams' archive within the incident's
            // range, by whom; the clients' addresses stay in the admin's log.
            var excerpt: [AuditEntry] = []
            for stream in incident.streams {
                excerpt += try await catalog.audit(stream: stream, since: .distantPast, limit: 10_000).filter { e in
                    e.detail.hasPrefix("incident \(incident.id) ") || (e.start.map { $0 <= incident.end } ?? false) && (e.end.map { $0 >= incident.start } ?? false)
                }.map { e in var e = e; e.address = nil; return e }
            }
            excerpt.sort { ($0.at, $0.id) < ($1.at, $1.id) }
            for stream in incident.streams {
                await catalog.audit(RecordingRoutes.audit(.export, context, stream: stream, (incident.start, incident.end),
                                                          detail: "incident \(incident.id) evidence bundle"), logger: context.logger)
            }
            let node = ProcessInfo.processInfo.hostName
            var headers = HTTPFields()
            headers[.contentType] = "application/x-tar"
            headers[.cacheControl] = "no-store"
            headers[.contentDisposition] = "attachment; filename=\"\(EvidenceBundle.directory(of: incident)).tar\""
            let logger = context.logger
            let chosen = cameras, audit = excerpt
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                let manifest = try await EvidenceBundle.write(cameras: chosen, incident: incident, bookmarks: marks, audit: audit, key: key, node: node,
                                                              offload: { work in try await NIOThreadPool.singleton.runIfActive(work) },
                                                              emit: { try await writer.write(ByteBuffer(bytes: $0)) })
                guard manifest != nil else {
                    // A file went under us: cut short, with no manifest (it cannot verify).
                    logger.error("incident: a recording went while its evidence bundle was written", metadata: ["incident": "\(incident.id)"])
                    throw HTTPError(.gone)
                }
                try await writer.finish(nil)
            })
        }
    }

    static func who(_ context: RelayRequestContext) -> String { context.identity?.name ?? "anonymous" }

    /// The incident named by the path, if the request may do `action` on every one of its streams.
    static func find(_ context: RelayRequestContext, catalog: any CatalogStore, needing action: AccessAction) async throws -> Result<Incident, RecordingPlaybackRoutes.Refusal> {
        let text = try context.parameters.require("id")
        guard let id = PeerNumber.integer(Substring(text), in: 1...Int(Int32.max)), let incident = try await catalog.incident(id: id) else {
            return .failure(.init(response: try HTTPResponses.jsonError(.notFound, "no incident \(text.prefix(20))")))
        }
        if let denied = incident.streams.first(where: { !context.may(action, stream: $0) }) {
            return .failure(.init(response: try HTTPResponses.jsonError(.forbidden, "no \(action.rawValue) permission on \(denied)")))
        }
        return .success(incident)
    }

    static func decode(_ request: Request) async throws -> Result<IncidentRequest, RecordingPlaybackRoutes.Refusal> {
        let data = try await request.body.collect(upTo: 64 * 1024)
        do {
            return .success(try JSONDecoder().decode(IncidentRequest.self, from: Data(data.readableBytesView)))
        } catch {
            return .failure(.init(response: try HTTPResponses.jsonError(.badRequest,
                "expected an object of title, notes, streams ([names]), start and end (RFC 3339), state (open or closed)")))
        }
    }

    /// Sets the range from RFC 3339 texts (nil: as it was); a line saying what is wrong, else nil.
    static func set(_ incident: inout Incident, start: String?, end: String?) -> String? {
        guard let s = start.map({ RecordingRoutes.time(Substring($0)) }) ?? incident.start,
              let e = end.map({ RecordingRoutes.time(Substring($0)) }) ?? incident.end else { return "start and end: RFC 3339 times" }
        guard s < e, e.timeIntervalSince(s) <= longestIncident else { return "start before end, at most \(Int(longestIncident)) s apart" }
        incident.start = s
        incident.end = e
        return nil
    }

    static func check(_ i: Incident) -> String? {
        guard !i.title.isEmpty, i.title.utf8.count <= 1000 else { return "title: 1 to 1000 bytes" }
        guard i.notes.utf8.count <= longestText else { return "notes: at most \(longestText) bytes" }
        guard !i.streams.isEmpty, i.streams.count <= Incident.maxStreams else { return "streams: 1 to \(Incident.maxStreams) names" }
        guard Set(i.streams).count == i.streams.count else { return "streams: a name twice" }
        return nil
    }

    /// A line naming the first stream neither configured nor recorded; nil when all are known.
    static func unknownStreams(_ names: [String], engine: RelayEngine, catalog: any CatalogStore) async -> String? {
        let recorded = Set((try? await catalog.recordedStreams()) ?? [])
        for name in names where engine.settings(name) == nil && !recorded.contains(name) {
            return "no stream \(name.prefix(128)) (configured or recorded)"
        }
        return nil
    }

    /// An open incident holds its range on each of its streams; a closed one holds nothing.
    static func hold(_ incident: Incident, catalog: any CatalogStore) async throws {
        guard incident.state == .open else { return }
        for stream in incident.streams {
            _ = try await catalog.addHold(RecordingHold(stream: stream, start: incident.start, end: incident.end, reason: incident.holdReason))
        }
    }

    static func release(_ incident: Incident, catalog: any CatalogStore) async throws {
        for stream in incident.streams {
            for h in try await catalog.holds(stream: stream) where h.reason == incident.holdReason {
                _ = try await catalog.removeHold(stream: stream, id: h.id)
            }
        }
    }

    static func bookmarks(of incident: Incident, catalog: any CatalogStore) async throws -> [Bookmark] {
        var marks: [Bookmark] = []
        for stream in incident.streams {
            marks += try await catalog.bookmarks(stream: stream, from: incident.start, to: incident.end, limit: 10_000)
        }
        return marks.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
    }

    /// `start`/`end` of a search (default: everything).
    static func searchRange(_ q: Hummingbird.Parameters) -> Result<(Date, Date), RecordingPlaybackRoutes.QueryProblem> {
        var start = Date.distantPast, end = Date.distantFuture
        if let s = q["start"] { guard let t = RecordingRoutes.time(s) else { return .failure(.init(message: "start: an RFC 3339 time")) }; start = t }
        if let e = q["end"] { guard let t = RecordingRoutes.time(e) else { return .failure(.init(message: "end: an RFC 3339 time")) }; end = t }
        guard start < end else { return .failure(.init(message: "start must be before end")) }
        return .success((start, end))
    }
}
