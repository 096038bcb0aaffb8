import Hummingbird
import Relay
import Foundation

/// The archive: what was recorded of a stream, found by wall-clock time (`playback`).
enum RecordingRoutes {
    struct Listing: Encodable {
        var stream: String
        var start: Date
        var end: Date
        var spans: [RecordedSpan]
        /// The breaks between spans inside the range (restarts, outages).
        var gaps: [Gap]
        var segments: Int
        var bytes: Int
        struct Gap: Encodable { var start: Date; var end: Date; var duration: Double }
    }

    /// RFC 3339, with or without fractional seconds.
    static func time(_ text: Substring?) -> Date? {
        guard let text, text.utf8.count <= 64 else { return nil }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: String(text)) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: String(text))
    }

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
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
            let segments: [RecordedSegment]
            do {
                segments = try await catalog.segments(stream: stream, from: start, to: end)
            } catch {
                return try HTTPResponses.jsonError(.internalServerError, "catalog: \(error)")
            }
            let spans = RecordedSpan.spans(segments)
            var gaps: [Listing.Gap] = []
            for (a, b) in zip(spans, spans.dropFirst()) {
                gaps.append(Listing.Gap(start: a.end, end: b.start, duration: b.start.timeIntervalSince(a.end)))
            }
            return try HTTPResponses.json(Listing(stream: stream, start: start, end: end, spans: spans, gaps: gaps,
                                                  segments: segments.count, bytes: segments.reduce(0) { $0 + $1.bytes }))
        }
    }
}
