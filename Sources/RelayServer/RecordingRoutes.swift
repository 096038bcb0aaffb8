import Access
import Hummingbird
import Relay
import RelayAPI
import Wire
import Foundation

/// The archive: what was recorded of a stream, found by wall-clock time (`playback`).
enum RecordingRoutes {
    /// RFC 3339, with or without fractional seconds.
    static func time(_ text: Substring?) -> Date? {
        guard let text, text.utf8.count <= 64 else { return nil }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: String(text)) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: String(text))
    }

    /// A hold's request body.
    struct HoldRequest: Decodable {
        var start: String
        var end: String
        var reason: String
    }

    /// An audit line for what this request does to `stream`'s archive.
    static func audit(_ action: AuditEntry.Action, _ context: RelayRequestContext, stream: String, _ range: (Date, Date)? = nil,
                      detail: String = "") -> AuditEntry {
        AuditEntry(who: context.identity?.name ?? "anonymous", action: action, stream: stream, start: range?.0, end: range?.1,
                   address: AccessMiddleware.peer(context.remoteAddress), detail: detail)
    }

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        // The audit log (admin): who played back, exported, held or deleted what.
        router.get("/api/audit") { request, _ in
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let q = request.uri.queryParameters
            var since = Date.distantPast
            if let s = q["since"] {
                guard let t = time(s) else { return try HTTPResponses.jsonError(.badRequest, "since: an RFC 3339 time") }
                since = t
            }
            var limit = 1000
            if let l = q["limit"] {
                guard let n = PeerNumber.integer(l, in: 1...100_000) else { return try HTTPResponses.jsonError(.badRequest, "limit: 1 to 100000") }
                limit = n
            }
            return try HTTPResponses.json(try await catalog.audit(stream: q["stream"].map(String.init), since: since, limit: limit))
        }
        // Holds (admin): a range kept past retention until released.
        router.post("/api/recordings/:stream/holds") { request, context in
            let stream = try context.parameters.require("stream")
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let data = try await request.body.collect(upTo: 16 * 1024)
            guard let body = try? JSONDecoder().decode(HoldRequest.self, from: Data(data.readableBytesView)) else {
                return try HTTPResponses.jsonError(.badRequest, "expected {\"start\": RFC 3339, \"end\": RFC 3339, \"reason\": text}")
            }
            guard let start = time(Substring(body.start)), let end = time(Substring(body.end)), start < end else {
                return try HTTPResponses.jsonError(.badRequest, "start and end are RFC 3339 times, start before end")
            }
            guard !body.reason.isEmpty, body.reason.utf8.count <= 1000 else {
                return try HTTPResponses.jsonError(.badRequest, "reason: 1 to 1000 bytes")
            }
            do {
                let hold = try await catalog.addHold(RecordingHold(stream: stream, start: start, end: end, reason: body.reason))
                await catalog.audit(audit(.hold, context, stream: stream, (start, end), detail: "hold \(hold.id): \(body.reason)"), logger: context.logger)
                return try HTTPResponses.json(hold, status: .created)
            } catch {
                return try HTTPResponses.jsonError(.internalServerError, "catalog: \(error)")
            }
        }
        router.get("/api/recordings/:stream/holds") { _, context in
            let stream = try context.parameters.require("stream")
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            return try HTTPResponses.json(try await catalog.holds(stream: stream))
        }
        router.delete("/api/recordings/:stream/holds/:id") { _, context in
            let stream = try context.parameters.require("stream")
            guard let id = Int(try context.parameters.require("id")) else { return try HTTPResponses.jsonError(.badRequest, "id: a number") }
            guard let catalog = engine.catalog else { return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog") }
            let held = try await catalog.holds(stream: stream).first { $0.id == id }
            guard let held, try await catalog.removeHold(stream: stream, id: id) else {
                return try HTTPResponses.jsonError(.notFound, "no hold \(id) on \(stream)")
            }
            await catalog.audit(audit(.release, context, stream: stream, (held.start, held.end), detail: "hold \(id): \(held.reason)"), logger: context.logger)
            return Response(status: .noContent)
        }
        // GET /api/recordings/{stream}?start=…&end=… (RFC 3339; default: the last 24 hours).
        router.get("/api/recordings/:stream") { request, context in
            let stream = try context.parameters.require("stream")
            guard let catalog = engine.catalog else {
                return try HTTPResponses.jsonError(.serviceUnavailable, "no catalog: recordings are not indexed (see catalog in README)")
            }
            let q = request.uri.queryParameters
            let now = Date()
            guard let end = q["end"].map({ time($0) }) ?? now, let start = q["start"].map({ time($0) }) ?? end.addingTimeInterval(-86_400) else {
                return try HTTPResponses.jsonError(.badRequest, "start and end are RFC 3339 times (2026-11-25T14:32:00Z)")
            }
            guard start < end else { return try HTTPResponses.jsonError(.badRequest, "start must be before end") }
            let spans: [RecordedSpan]
            do {
                spans = try await catalog.spans(stream: stream, from: start, to: end)
            } catch {
                return try HTTPResponses.jsonError(.internalServerError, "catalog: \(error)")
            }
            return try HTTPResponses.json(RecordingListing(stream: stream, start: start, end: end, spans: spans))
        }
    }
}
