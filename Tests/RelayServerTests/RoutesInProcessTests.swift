import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdBcrypt
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import Access
import Relay
import RelayAPI
import RelayServer
import TestSupport

/// The HTTP routes that need no network client, answered in process (Hummingbird's router test
/// framework: no socket, no server; every request's authority is `localhost`): the API behind
/// the one authorizer, its refusals as JSON.
@Suite(.ownThreads, .tags(.fast)) struct RoutesInProcessTests {
    static let camHash = Bcrypt.hash("cam-pw-1", cost: 4)
    static let adminHash = Bcrypt.hash("admin-pw-2", cost: 4)

    /// An engine (not started: the API reads its settings and hubs) and the application over its
    /// routes, with a user who reads `cam` only and an admin.
    static func app() async throws -> (some ApplicationProtocol, RelayEngine) {
        let c = try Configuration.parse("""
        auth:
          users:
            - {name: camuser, password: "\(camHash)", permissions: [{action: read, streams: cam}]}
            - {name: boss, password: "\(adminHash)", permissions: [admin, read]}
        streams:
          cam: {source: "testsrc://?size=160x96&fps=10", preview: false}
          gate: {source: "testsrc://?size=160x96&fps=10", preview: false}
        """, sources: TestSources.opener)
        let engine = RelayEngine(configuration: c, sources: TestSources.opener, logger: Logger(label: "test"))
        let authorizer = try await Authorizer(auth: c.auth, allowedHosts: c.effectiveAllowedHosts)
        let routers = RelayHTTP.routers(engine: engine, metrics: RelayMetrics(authorizer: authorizer), authorizer: authorizer)
        return (Application(router: routers.http), engine)
    }

    static func basic(_ user: String, _ password: String) -> HTTPFields {
        [.authorization: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    @Test func theAPIListsWhatEachUserMayReadAndRefusesTheRest() async throws {
        let (app, _) = try await Self.app()
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/streams", method: .get, headers: [:]) { r in
                #expect(r.status == .unauthorized)
                #expect(r.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
                #expect((try? RelayAPI.decoder.decode(APIError.self, from: Data(r.body.readableBytesView))) != nil)
            }
            try await client.execute(uri: "/api/streams", method: .get, headers: Self.basic("camuser", "cam-pw-1")) { r in
                #expect(r.status == .ok)
                let names = try RelayAPI.decoder.decode([StreamView].self, from: Data(r.body.readableBytesView)).map(\.stream.name)
                #expect(names == ["cam"])
            }
            try await client.execute(uri: "/api/streams/gate", method: .get, headers: Self.basic("camuser", "cam-pw-1")) { r in
                #expect(r.status == .forbidden)
            }
            try await client.execute(uri: "/api/streams", method: .get, headers: Self.basic("camuser", "wrong")) { r in
                #expect(r.status == .unauthorized)
            }
        }
    }

    @Test func anAdminAddsAStreamAndABadBodyNamesItsKey() async throws {
        let (app, engine) = try await Self.app()
        try await app.test(.router) { client in
            let body = ByteBuffer(string: #"{"source": "testsrc://?size=160x96&fps=10", "preview": false, "title": "Dock"}"#)
            try await client.execute(uri: "/api/streams/dock", method: .put, headers: Self.basic("camuser", "cam-pw-1"), body: body) { r in
                #expect(r.status == .forbidden)
            }
            try await client.execute(uri: "/api/streams/dock", method: .put, headers: Self.basic("boss", "admin-pw-2"), body: body) { r in
                #expect(r.status == .created)
                let made = try RelayAPI.decoder.decode(StreamView.self, from: Data(r.body.readableBytesView))
                #expect(made.stream.name == "dock")
            }
            #expect(engine.settings("dock")?.title == "Dock")
            // Again: now it replaces.
            try await client.execute(uri: "/api/streams/dock", method: .put, headers: Self.basic("boss", "admin-pw-2"), body: body) { r in
                #expect(r.status == .ok)
            }
            let bad = ByteBuffer(string: #"{"source": "testsrc://", "hls": {"variant": "dash"}}"#)
            try await client.execute(uri: "/api/streams/dock2", method: .put, headers: Self.basic("boss", "admin-pw-2"), body: bad) { r in
                #expect(r.status == .badRequest)
                let e = try RelayAPI.decoder.decode(APIError.self, from: Data(r.body.readableBytesView))
                #expect(e.error.contains("streams.dock2.hls.variant"), "\(e.error)")
            }
            #expect(engine.hubs["dock2"] == nil)
            try await client.execute(uri: "/api/openapi.json", method: .get, headers: Self.basic("camuser", "cam-pw-1")) { r in
                #expect(r.status == .ok)
                // The document says what the route does: a PUT makes (201) or replaces (200).
                let document = try JSONDecoder().decode(OpenAPITests.OperationsDocument.self, from: Data(r.body.readableBytesView))
                let statuses = Set((document.paths["/api/streams/{name}"]?["put"]?.responses ?? [:]).keys)
                #expect(statuses.isSuperset(of: ["200", "201", "400"]), "\(statuses)")
            }
        }
        await engine.stop()
    }
}
