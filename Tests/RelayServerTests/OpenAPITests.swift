import Testing
import TestSupport
import Foundation
import Logging
@testable import RelayServer
import Relay
import Access
import Hummingbird
import HTTPTypes
import WebRTC

/// The OpenAPI document against the routers the server builds: every route documented, every
/// documented operation a route, and each operation's permission the one the access check asks.
/// (`OpenAPIServeTests` checks it against real answers.)
@Suite(.ownThreads, .tags(.fast)) struct OpenAPITests {
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
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
        #expect((doc["openapi"] as? String)?.hasPrefix("3.1") == true)
        let paths = try #require(doc["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, item) in paths {
            for method in item.keys where ["get", "put", "post", "delete", "patch", "options"].contains(method) { documented.insert("\(method.uppercased()) \(path)") }
        }
        #expect(routes.count > 25)
        #expect(routes.subtracting(documented).isEmpty, "routes not documented: \(routes.subtracting(documented).sorted())")
        #expect(documented.subtracting(routes).isEmpty, "documented, not routes: \(documented.subtracting(routes).sorted())")
    }

    @Test func eachOperationsPermissionIsTheOneTheAccessCheckAsks() throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: [String: Any]]])
        for (path, item) in paths {
            // Sample values for the path's parameters.
            let concrete = path.replacingOccurrences(of: "{name}", with: "cam").replacingOccurrences(of: "{stream}", with: "cam")
                .replacingOccurrences(of: "{file}", with: "index.m3u8").replacingOccurrences(of: "{sink}", with: "preview").replacingOccurrences(of: "{id}", with: "1")
                .replacingOccurrences(of: "{session}", with: "s1")
            for (method, op) in item {
                let documented = op["x-liverelay-permission"] as? String
                let asked = AccessRequirement.of(method: .init(method.uppercased())!, path: concrete).action
                #expect(documented == asked?.rawValue, "\(method.uppercased()) \(path): documented \(documented ?? "none"), the check asks \(asked?.rawValue ?? "none")")
                // Where a permission is needed, 401 and 403 are documented answers.
                let responses = op["responses"] as? [String: Any] ?? [:]
                if asked != nil { #expect(responses["401"] != nil && responses["403"] != nil, "\(method) \(path)") }
            }
        }
    }
}
