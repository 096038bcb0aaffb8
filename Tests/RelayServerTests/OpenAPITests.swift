import Testing
import TestSupport
import Foundation
import Logging
@testable import RelayServer
@testable import Relay
import RelayAPI
import MediaCore
import Access
import Hummingbird
import HTTPTypes
import WebRTC

/// The OpenAPI document against the routers the server builds: every route documented, every
/// documented operation a route, and each operation's permission the one the access check asks.
/// (`OpenAPIServeTests` checks it against real answers.)
@Suite(.ownThreads, .tags(.fast)) struct OpenAPITests {
    static func document() throws -> OperationsDocument {
        try JSONDecoder().decode(OperationsDocument.self, from: Data(OpenAPIDocument.json.utf8))
    }

    /// The text the EmbedText plugin built in is Sources/RelayServer/openapi.json's, byte for byte.
    @Test func theEmbeddedDocumentIsTheFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try Data(contentsOf: root.appendingPathComponent("Sources/RelayServer/openapi.json"))
        let same = Data(OpenAPIDocument.json.utf8) == file
        #expect(same, "OpenAPIDocument.json (\(OpenAPIDocument.json.utf8.count) bytes) is not Sources/RelayServer/openapi.json (\(file.count) bytes)")
    }

    @Test func everyRouteIsDocumentedAndEveryOperationIsARoute() async throws {
        let logger = Logger(label: "test")
        let authorizer = try await Authorizer(auth: nil, allowedHosts: ["localhost"], logger: logger)
        let engine = RelayEngine(configuration: Configuration(), logger: logger)
        // With WebRTC on (its routes exist only then): a real UDP port, closed at the end.
        let webrtc = try await WebRTCServer.start(.init(host: "127.0.0.1"), logger: logger)
        defer { Task { await webrtc.stop() } }
        let (http, ws) = RelayHTTP.routers(engine: engine, metrics: RelayMetrics(authorizer: authorizer), authorizer: authorizer, webrtc: webrtc)
        let routes = Set((http.routes + ws.routes).map { "\($0.method.rawValue) \($0.path.description)" })
        let doc = try Self.document()
        #expect(doc.openapi?.hasPrefix("3.1") == true)
        var documented = Set<String>()
        for (path, item) in doc.paths {
            for method in item.keys where ["get", "put", "post", "delete", "patch", "options"].contains(method) { documented.insert("\(method.uppercased()) \(path)") }
        }
        #expect(routes.count > 25)
        #expect(routes.subtracting(documented).isEmpty, "routes not documented: \(routes.subtracting(documented).sorted())")
        #expect(documented.subtracting(routes).isEmpty, "documented, not routes: \(documented.subtracting(routes).sorted())")
    }

    @Test func eachOperationsPermissionIsTheOneTheAccessCheckAsks() throws {
        let paths = try Self.document().paths
        for (path, item) in paths {
            // Sample values for the path's parameters.
            let concrete = path.replacingOccurrences(of: "{name}", with: "cam").replacingOccurrences(of: "{stream}", with: "cam")
                .replacingOccurrences(of: "{file}", with: "index.m3u8").replacingOccurrences(of: "{sink}", with: "preview").replacingOccurrences(of: "{id}", with: "1")
                .replacingOccurrences(of: "{session}", with: "s1")
            for (method, op) in item {
                let documented = op.permission
                let asked = AccessRequirement.of(method: .init(method.uppercased())!, path: concrete).action
                #expect(documented == asked?.rawValue, "\(method.uppercased()) \(path): documented \(documented ?? "none"), the check asks \(asked?.rawValue ?? "none")")
                // Where a permission is needed, 401 and 403 are documented answers.
                let responses = op.responses ?? [:]
                if asked != nil { #expect(responses["401"] != nil && responses["403"] != nil, "\(method) \(path)") }
            }
        }
    }

    /// The types the server encodes and the document's schemas say the same: for a sample of
    /// each main answer, every key RelayAPI's encoder writes is a property of the schema, and
    /// every required property is written (nested objects and arrays too, `$ref`s followed).
    @Test func theTypesWriteWhatTheSchemasSay() throws {
        let schemas = try JSONDecoder().decode(SchemaDocument.self, from: Data(OpenAPIDocument.json.utf8)).components.schemas
        let at = Date(timeIntervalSince1970: 1_764_000_000)
        let latency = LatencySummary(count: 3, p50Ms: 1.5, p90Ms: 2.5, p99Ms: 3.5, maxMs: 4.5)
        var status = StreamStatus(name: "cam", title: "Front door", source: "rtsp://cam/1")
        status.state = .reconnecting
        status.reconnectAttempt = 2
        status.lastError = "timeout"
        status.since = at
        status.signalLostSince = at
        status.codec = "h264"
        status.width = 1280
        status.height = 720
        status.fpsIn = 25
        status.decoderPath = "software"
        status.fallbackReason = "no device"
        status.decoding = true
        status.connections = 3
        status.arrivalToDecoded = latency
        status.pacing = "packets"
        status.transportFallback = "tcp"
        status.damaged = true
        status.damagedSince = at
        status.damageEvents = 1
        status.rtpPacketsLost = 4
        status.link = LinkHealth(tracks: [.init(index: 0, media: "video", packetsReceived: 100, packetsLost: 2, packetsReordered: 1, jitter: 0.002)],
                                 srt: .init(roundTripMs: 12, packetsReceived: 100, packetsLost: 1, packetsRetransmitted: 1, packetsDropped: 0, receiveMbps: 4))
        status.bytesIn = 1000
        status.bitrateIn = 8000
        var counters = SinkCounters()
        counters.received = 10
        counters.delivered = 9
        counters.outOfOrder = 1
        counters.dropped.add(.queueFull, 1)
        let sinks = [
            OutputStatus(name: "preview", kind: .preview, state: .running, policy: SinkPolicy(ordering: .arrival, freshness: .latest(count: 1)),
                         queueDepth: 1, counters: counters, arrivalToDelivered: latency, captureToDelivered: latency, lastError: "slow", errors: 1),
            OutputStatus(name: "viewer-1", kind: .viewer, state: .running, policy: SinkPolicy(freshness: .maxAge(milliseconds: 500)),
                         arrivalToDelivered: latency, captureToDelivered: LatencySummary(count: 0)),
        ]
        let meta = StreamMeta(name: "cam", title: "Front door", description: "The porch", keywords: ["door"], preview: "/streams/cam/preview.mjpg",
                              hls: "/streams/cam/hls/index.m3u8")
        let hls = StreamView.HLSView(variant: "fmp4", url: "/streams/cam/hls/index.m3u8", mediaSequence: 7, segments: 5, targetDuration: 2, ended: false,
                                     availability: latency, push: HLSPushCounters(), directory: HLSDirectoryStatus(directory: "/srv/hls"))
        let rendition = RenditionInfo(of: "cam", name: "360p", width: 640, height: 360, bitrateKbps: 800, encoding: true, framesEncoded: 30,
                                      codecs: "avc1.64001e", encodeMilliseconds: 3.5)
        let view = StreamView(stream: status, sinks: sinks, meta: meta, forwards: [ForwardStatus()], recordings: ["/r/cam-1.mp4"], hls: hls,
                              origin: "api", owner: "node-a", node: "node-b", rendition: rendition)
        let spans = [RecordedSpan(start: at, end: at.addingTimeInterval(60), duration: 60, bytes: 1000, segments: 10),
                     RecordedSpan(start: at.addingTimeInterval(90), end: at.addingTimeInterval(120), duration: 30, bytes: 500, segments: 5)]
        let listing = RecordingListing(stream: "cam", start: at, end: at.addingTimeInterval(3600), spans: spans)
        let fleet = FleetReport(node: "node-a", nodes: [.init(name: "node-a", url: "http://a", rtspURL: "rtsp://a", lastHeartbeat: "2025-11-24T16:00:00Z", live: true)],
                                leases: [.init(stream: "cam", node: "node-a", until: "2025-11-24T16:00:30Z", moves: 0)])
        let event = StreamEvent(stream: "cam", kind: .reconnecting, at: at, attempt: 1, connection: 2, detail: "timeout", details: ["peer": "10.0.0.1"])
        let samples: [(schema: String, json: Data)] = [
            ("StreamView", try RelayAPI.encoder.encode(view)),
            ("StreamStatus", try RelayAPI.encoder.encode(status)),
            ("OutputStatus", try RelayAPI.encoder.encode(sinks[1])),
            ("StreamMeta", try RelayAPI.encoder.encode(StreamMeta(name: "bare"))),
            ("RecordedSpans", try RelayAPI.encoder.encode(listing)),
            ("FleetReport", try RelayAPI.encoder.encode(fleet)),
            ("StreamEvent", try RelayAPI.eventEncoder.encode(event)),
            ("Error", try RelayAPI.encoder.encode(APIError(error: "no"))),
            ("IncidentView", try RelayAPI.encoder.encode(IncidentView(incident: Incident(id: 3, title: "Gate 3", notes: "two units", streams: ["cam"], start: at,
                                                                                         end: at.addingTimeInterval(60), createdBy: "lead", created: at, updated: at),
                                                                      bookmarks: [Bookmark(id: 1, stream: "cam", time: at, note: "a car", who: "unit1", made: at)]))),
            ("NodeKeys", try RelayAPI.encoder.encode(NodeKeys(node: "node-a", keys: [.init(algorithm: "Ed25519", id: "0123456789abcdef", publicKey: "AAAA")]))),
            ("AuditEntry", try RelayAPI.encoder.encode(AuditEntry(id: 1, at: at, who: "lead", action: .incident, stream: "cam", start: at, end: at,
                                                                  address: "10.0.0.1", detail: "incident 3 made"))),
            ("AuditEntry", try RelayAPI.encoder.encode(AuditEntry(id: 2, at: at, who: "operator", action: .ptz, stream: "cam", address: "10.0.0.1", detail: "stop"))),
            ("PTZStatus", try RelayAPI.encoder.encode(PTZStatus(stream: "cam", profile: "Profile_Main", position: PTZPosition(pan: 0.5, tilt: -0.25, zoom: 0),
                                                                presets: [PTZPreset(token: "home", name: "Home", position: PTZPosition(pan: 0))]))),
            ("PTZCommand", try RelayAPI.encoder.encode(PTZCommand(action: .move, pan: 0.5, tilt: 0, zoom: -1, timeout: 2, preset: "p", name: "n"))),
            ("PTZResult", try RelayAPI.encoder.encode(PTZResult(action: .set, preset: "preset_1"))),
        ]
        for sample in samples {
            let schema = try #require(schemas[sample.schema], "no schema \(sample.schema) in openapi.json")
            let written = try JSONDecoder().decode(JSONValue.self, from: sample.json)
            let problems = Self.problems(written, schema, sample.schema, schemas)
            #expect(problems.isEmpty, "\(problems) in \(String(decoding: sample.json, as: UTF8.self))")
        }
        // Both ways: what the encoder writes, the decoder reads back.
        let back = try RelayAPI.decoder.decode(StreamView.self, from: try RelayAPI.encoder.encode(view))
        #expect(back.sinks.map(\.policy) == view.sinks.map(\.policy) && back.sinks[0].counters == counters)
        #expect(back.rendition == rendition && back.stream.link == status.link && back.hls?.availability == latency)
        #expect(try RelayAPI.decoder.decode(RecordingListing.self, from: try RelayAPI.encoder.encode(listing)) == listing)
        #expect(try RelayAPI.decoder.decode(FleetReport.self, from: try RelayAPI.encoder.encode(fleet)) == fleet)
    }

    /// Where `value` and `schema` disagree: keys written that the schema lacks, required keys
    /// not written.
    static func problems(_ value: JSONValue, _ schema: Schema, _ path: String, _ schemas: [String: Schema]) -> [String] {
        var schema = schema
        if let ref = schema.ref {
            guard let name = ref.split(separator: "/").last, let named = schemas[String(name)] else { return ["\(path): no schema \(ref)"] }
            schema = named
        }
        switch value {
        case .object(let object):
            // A free-form object (`additionalProperties` only): any keys.
            guard let properties = schema.properties else { return [] }
            var out: [String] = []
            for key in object.keys.sorted() where properties[key] == nil { out.append("\(path).\(key): written, not in the schema") }
            for key in schema.required ?? [] where object[key] == nil { out.append("\(path).\(key): required, not written") }
            for (key, v) in object.sorted(by: { $0.key < $1.key }) {
                if let p = properties[key] { out += problems(v, p, "\(path).\(key)", schemas) }
            }
            return out
        case .array(let elements):
            guard let items = schema.items else { return [] }
            return elements.enumerated().flatMap { problems($0.element, items, "\(path)[\($0.offset)]", schemas) }
        default:
            return []
        }
    }

    /// What the tests read of the document's operations: its version, and each operation (by
    /// path, then method) with its permission and the statuses it documents. Read with a plain
    /// decoder: the keys are paths, methods and statuses as written.
    struct OperationsDocument: Decodable {
        struct Operation: Decodable {
            var permission: String?
            /// The documented answers by status (only which statuses are read).
            var responses: [String: JSONValue]?

            enum CodingKeys: String, CodingKey {
                case permission = "x-liverelay-permission"
                case responses
            }
        }
        var openapi: String?
        var paths: [String: [String: Operation]]
    }

    /// What the test reads of the document: its schemas.
    struct SchemaDocument: Decodable {
        struct Components: Decodable { var schemas: [String: Schema] }
        var components: Components
    }

    /// A schema's shape, as far as keys go.
    final class Schema: Decodable, Sendable {
        let ref: String?
        let properties: [String: Schema]?
        let required: [String]?
        let items: Schema?
        enum CodingKeys: String, CodingKey {
            case ref = "$ref"
            case properties, required, items
        }
    }

    /// A JSON value as written, keys untouched.
    indirect enum JSONValue: Decodable {
        case object([String: JSONValue]), array([JSONValue]), string(String), number(Double), bool(Bool), null

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() {
                self = .null
            } else if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else if let n = try? c.decode(Double.self) {
                self = .number(n)
            } else if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let a = try? c.decode([JSONValue].self) {
                self = .array(a)
            } else {
                self = .object(try c.decode([String: JSONValue].self))
            }
        }
    }
}
