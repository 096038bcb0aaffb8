import Testing
import Foundation
import Access
import Relay
import HummingbirdBcrypt

/// The one authorizer, asked directly: every credential form, action and stream of the matrix.
@Suite struct AuthorizerTests {
    static let hash = Bcrypt.hash("pw-viewer", cost: 4)
    static let adminHash = Bcrypt.hash("pw-admin", cost: 4)

    static func authorizer() async throws -> Authorizer {
        var auth = AuthSettings()
        auth.users = [
            AccessUser(name: "viewer", passwordHash: hash, permissions: [AccessPermission(action: .read, streams: "cam*"),
                                                                        AccessPermission(action: .publish, streams: "phone1")]),
            AccessUser(name: "admin", passwordHash: adminHash, permissions: AccessAction.allCases.map { AccessPermission(action: $0) }),
        ]
        auth.anonymous = [AccessPermission(action: .read, streams: "public")]
        return try await Authorizer(auth: auth, allowedHosts: nil)
    }

    static func basic(_ user: String, _ password: String) -> Authorizer.Credentials {
        .header("Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
    }

    static func label(_ d: Authorizer.Decision) -> String {
        switch d {
        case .allowed(let id): return "allowed:\(id?.name ?? "-")"
        case .unauthorized: return "401"
        case .forbidden: return "403"
        case .limited: return "429"
        }
    }

    @Test func thePermissionMatrix() async throws {
        let a = try await Self.authorizer()
        let viewer = Self.basic("viewer", "pw-viewer"), admin = Self.basic("admin", "pw-admin")
        let rtmpViewer = Authorizer.Credentials.userPassword(user: "viewer", password: "pw-viewer")
        let cases: [(Authorizer.Credentials, AccessAction, String?, String)] = [
            (.none, .read, "public", "allowed:anonymous"),
            (.none, .read, "cam1", "401"),
            (.none, .publish, "public", "401"),
            (.none, .admin, nil, "401"),
            (viewer, .read, "cam1", "allowed:viewer"),
            (viewer, .read, "camera-7", "allowed:viewer"),
            (viewer, .read, "lobby", "403"),
            (viewer, .read, nil, "allowed:viewer"),
            (viewer, .publish, "phone1", "allowed:viewer"),
            (viewer, .publish, "phone2", "403"),
            (viewer, .admin, nil, "403"),
            (viewer, .metrics, nil, "403"),
            (rtmpViewer, .publish, "phone1", "allowed:viewer"),
            (rtmpViewer, .publish, "cam1", "403"),
            (admin, .admin, nil, "allowed:admin"),
            (admin, .metrics, nil, "allowed:admin"),
            (admin, .publish, "anything", "allowed:admin"),
            (.header("Digest username=\"viewer\""), .read, "cam1", "401"),
            (.header("Basic !!!not base64"), .read, "public", "401"),
            (.token("not.a.jwt"), .read, "public", "401"),
            (.header("Bearer x.y.z"), .read, "public", "401"),
        ]
        for (i, (credentials, action, stream, want)) in cases.enumerated() {
            // A fresh address per case: failed logins of one case do not limit the next.
            let got = Self.label(await a.authorize(credentials, action, stream: stream, from: "10.0.0.\(i)"))
            #expect(got == want, "\(credentials) \(action) \(stream ?? "-")")
        }
    }

    @Test func wrongPasswordsFromOneAddressAreLimitedThenCounted() async throws {
        let a = try await Self.authorizer()
        for _ in 0..<10 {
            #expect(Self.label(await a.authorize(Self.basic("viewer", "nope"), .read, stream: "cam1", from: "192.0.2.1")) == "401")
        }
        // The address is limited now, even with the right password; another address is not.
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "192.0.2.1")) == "429")
        #expect(Self.label(await a.authorize(.userPassword(user: "viewer", password: "pw-viewer"), .publish, stream: "phone1", from: "192.0.2.1")) == "429")
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "192.0.2.2")) == "allowed:viewer")
        #expect(a.failedLogins == 10)
        #expect(a.rateLimited == 2)
    }

    @Test func withoutAnAuthSectionEveryoneMay() async throws {
        let a = try await Authorizer(auth: nil, allowedHosts: nil)
        #expect(!a.isEnabled)
        for action in AccessAction.allCases {
            #expect(await a.authorize(.none, action, stream: "x", from: "203.0.113.9") == .allowed(nil))
        }
    }
}
