import Testing
import Foundation
import Access
import Wire
import Synchronization
import HummingbirdBcrypt

/// The one authorizer, asked directly: every credential form, action and stream of the matrix.
@Suite(.tags(.fast)) struct AuthorizerTests {
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

    @Test func wrongPasswordsLimitThatUserFromThatClientOnly() async throws {
        let a = try await Self.authorizer()
        for _ in 0..<10 {
            #expect(Self.label(await a.authorize(Self.basic("viewer", "nope"), .read, stream: "cam1", from: "192.0.2.1")) == "401")
        }
        // That user from that client is limited now, even with the right password, by any door.
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "192.0.2.1")) == "429")
        #expect(Self.label(await a.authorize(.userPassword(user: "viewer", password: "pw-viewer"), .publish, stream: "phone1",
                                             door: .rtmp, from: "192.0.2.1")) == "429")
        // Nobody else is: anonymous reads, another user at the same address, the same user elsewhere.
        #expect(Self.label(await a.authorize(.none, .read, stream: "public", from: "192.0.2.1")) == "allowed:anonymous")
        #expect(Self.label(await a.authorize(Self.basic("admin", "pw-admin"), .read, stream: "cam1", from: "192.0.2.1")) == "allowed:admin")
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "192.0.2.2")) == "allowed:viewer")
        #expect(a.failedLogins == 10)
        #expect(a.rateLimited == 2)
    }

    /// An IPv6 client is counted by its /64: another address of the same network is the same
    /// client (a host picks any at will), another network is not.
    @Test func anIPv6ClientIsItsSlash64() async throws {
        let a = try await Self.authorizer()
        for i in 0..<10 {
            #expect(Self.label(await a.authorize(Self.basic("viewer", "nope"), .read, stream: "cam1", from: "2001:db8:1:2::\(i + 1)")) == "401")
        }
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "2001:db8:1:2:ffff::99")) == "429")
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "2001:db8:1:3::1")) == "allowed:viewer")
        // An IPv4 client stays its address.
        #expect(Authorizer.limited("192.0.2.7") == "192.0.2.7" && Authorizer.limited("::ffff:192.0.2.7") == "::ffff:192.0.2.7")
        #expect(Authorizer.limited("[2001:db8:1:2:a:b:c:d]") == "2001:db8:1:2::/64")
    }

    @Test func theLimitEndsWithItsWindow() async throws {
        let clock = Mutex<UInt64>(1)
        var auth = AuthSettings()
        auth.users = [AccessUser(name: "viewer", passwordHash: Self.hash, permissions: [AccessPermission(action: .read)])]
        let a = try await Authorizer(auth: auth, allowedHosts: nil, clock: { clock.withLock { $0 } })
        for _ in 0..<Authorizer.failureLimit { _ = await a.authorize(Self.basic("viewer", "nope"), .read, stream: "x", from: "192.0.2.1") }
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "x", from: "192.0.2.1")) == "429")
        clock.withLock { $0 += 61_000_000_000 }
        #expect(Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "x", from: "192.0.2.1")) == "allowed:viewer")
    }

    /// Publish keys are credentials like passwords: checked by the authorizer, and every wrong
    /// one counts toward the same limit (per client and stream).
    @Test func wrongPublishKeysCountLikeWrongPasswords() async throws {
        var auth = AuthSettings()
        auth.users = [AccessUser(name: "viewer", passwordHash: Self.hash, permissions: [AccessPermission(action: .publish, streams: "phone1")])]
        let streams = AccessStreams(publishKeys: { stream, door in
            door == .rtmp && stream == "phone1" ? ["global-key-1", "phone1-key-2"] : []
        })
        for withAuth in [true, false] {
            let a = try await Authorizer(auth: withAuth ? auth : nil, allowedHosts: nil, streams: streams)
            func publish(_ c: AccessCredentials, _ stream: String = "phone1", from: String = "192.0.2.1") async -> String {
                Self.label(await a.authorize(AccessRequest(c, .publish, stream: stream, door: .rtmp, peer: from)))
            }
            #expect(await publish(.publishKey("global-key-1")) == "allowed:publish key")
            #expect(await publish(.publishKey("phone1-key-2")) == "allowed:publish key")
            #expect(await publish(.none) == "401")
            // A key opens only the stream it belongs to; a stream without keys follows `auth`.
            #expect(await publish(.publishKey("global-key-1"), "phone2") == (withAuth ? "401" : "allowed:-"))
            for _ in 0..<10 { #expect(await publish(.publishKey("guess")) == "401") }
            #expect(await publish(.publishKey("phone1-key-2")) == "429")
            #expect(await publish(.publishKey("phone1-key-2"), from: "192.0.2.9") == "allowed:publish key")
            #expect(a.failedLogins == 10)
        }
    }

    /// libsrt compares an SRT caller's passphrase: a caller given one that never completes its
    /// handshake counts as a wrong passphrase once its time is up; one that arrives does not.
    @Test func srtPassphrasesNotCompletedCountAsFailures() async throws {
        let clock = Mutex<UInt64>(1)
        let streams = AccessStreams(publishKeys: { stream, door in door == .srt && stream == "field" ? ["field-passphrase"] : [] })
        let a = try await Authorizer(auth: AuthSettings(), allowedHosts: nil, streams: streams, clock: { clock.withLock { $0 } })
        let ask = AccessRequest(.none, .publish, stream: "field", door: .srt, peer: "192.0.2.1")
        #expect(a.sharedSecret(ask, attempt: "192.0.2.1:5000") == .passphrase("field-passphrase"))
        a.attemptSucceeded("192.0.2.1:5000")
        // Counted as they come (a flood of handshakes meets the limit at once), even from one port.
        for _ in 1...10 { #expect(a.sharedSecret(ask, attempt: "192.0.2.1:7") == .passphrase("field-passphrase")) }
        #expect(a.sharedSecret(ask, attempt: "192.0.2.1:11") == .limited)
        clock.withLock { $0 += 61_000_000_000 }
        #expect(a.sharedSecret(ask, attempt: "192.0.2.1:12") == .passphrase("field-passphrase"))
        clock.withLock { $0 -= 61_000_000_000 }
        #expect(a.failedLogins == 11)
        var elsewhere = ask
        elsewhere.peer = "192.0.2.2"
        #expect(a.sharedSecret(elsewhere, attempt: "192.0.2.2:1") == .passphrase("field-passphrase"))
        // Without a passphrase for the stream: open only where anyone may publish.
        var other = ask
        other.stream = "lobby"
        #expect(a.sharedSecret(other, attempt: "192.0.2.2:2") == .refused)
        let open = try await Authorizer(auth: nil, allowedHosts: nil, streams: streams)
        #expect(open.sharedSecret(other, attempt: "192.0.2.2:3") == .open)
    }

    /// An SRT reader: its stream's read passphrase when it has one (never the publish one);
    /// else open where anonymous reading is granted; with no `auth` at all, to loopback only.
    @Test func anSRTReaderNeedsTheReadPassphraseOrOpenReading() async throws {
        let streams = AccessStreams(publishKeys: { _, _ in ["publish-phrase"] }, readPassphrase: { $0 == "ops" ? "read-phrase-1" : nil })
        let ops = AccessRequest(.none, .read, stream: "ops", door: .srt, peer: "192.0.2.1")
        var lobby = ops
        lobby.stream = "lobby"
        let users = try await Authorizer(auth: AuthSettings(), allowedHosts: nil, streams: streams)
        #expect(users.sharedSecret(ops, attempt: "192.0.2.1:1") == .passphrase("read-phrase-1"))
        #expect(users.sharedSecret(lobby, attempt: "192.0.2.1:2") == .refused)
        var anonymous = AuthSettings()
        anonymous.anonymous = [AccessPermission(action: .read, streams: "lob*")]
        let open = try await Authorizer(auth: anonymous, allowedHosts: nil, streams: streams)
        #expect(open.sharedSecret(lobby, attempt: "192.0.2.1:3") == .open)
        let none = try await Authorizer(auth: nil, allowedHosts: nil, streams: streams)
        #expect(none.sharedSecret(lobby, attempt: "192.0.2.1:4") == .refused)
        for loopback in ["127.0.0.1", "::1", "::ffff:127.0.0.5"] {
            var local = lobby
            local.peer = loopback
            #expect(none.sharedSecret(local, attempt: "\(loopback):5") == .open, "\(loopback)")
        }
    }

    /// The global key opens every stream: it is one secret, whichever stream's name a guess
    /// comes with (new names included, as `auto_create` takes them).
    @Test func theGlobalKeyIsOneSecretAcrossStreams() async throws {
        let streams = AccessStreams(publishKeys: { stream, _ in stream == "own" ? ["global-key-1", "own-key-2"] : ["global-key-1"] })
        let a = try await Authorizer(auth: nil, allowedHosts: nil, streams: streams)
        for i in 0..<10 {
            #expect(Self.label(await a.authorize(AccessRequest(.publishKey("guess"), .publish, stream: "new\(i)", door: .rtmp, peer: "192.0.2.1"))) == "401")
        }
        #expect(Self.label(await a.authorize(AccessRequest(.publishKey("global-key-1"), .publish, stream: "new99", door: .rtmp, peer: "192.0.2.1"))) == "429")
        // A stream with its own key too is another secret (either opens it).
        #expect(Self.label(await a.authorize(AccessRequest(.publishKey("own-key-2"), .publish, stream: "own", door: .rtmp, peer: "192.0.2.1"))) == "allowed:publish key")
    }

    /// Guesses sent side by side meet the limit like guesses in a row (each reserves its failure
    /// before bcrypt runs); the right password sent many times at once is one check, not limited.
    @Test func parallelGuessesMeetTheLimit() async throws {
        let a = try await Self.authorizer()
        let results = await withTaskGroup(of: String.self) { group in
            for i in 0..<30 { group.addTask { Self.label(await a.authorize(Self.basic("viewer", "guess-\(i)"), .read, stream: "cam1", from: "192.0.2.1")) } }
            var all: [String] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.filter { $0 == "401" }.count == 10 && results.filter { $0 == "429" }.count == 20)
        let right = await withTaskGroup(of: String.self) { group in
            for _ in 0..<30 { group.addTask { Self.label(await a.authorize(Self.basic("viewer", "pw-viewer"), .read, stream: "cam1", from: "192.0.2.2")) } }
            var all: [String] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(right.allSatisfy { $0 == "allowed:viewer" })
    }

    /// A player polling with an expired token limits that token only: another token from the
    /// same address still works.
    @Test func eachTokenIsItsOwnPrincipal() async throws {
        let a = try await Self.authorizer()
        for _ in 0..<10 { _ = await a.authorize(.token("expired.token.one"), .read, stream: "public", from: "192.0.2.1") }
        #expect(Self.label(await a.authorize(.token("expired.token.one"), .read, stream: "public", from: "192.0.2.1")) == "429")
        #expect(Self.label(await a.authorize(.token("another.token.two"), .read, stream: "public", from: "192.0.2.1")) == "401")
    }

    /// WHIP and HLS uploads take the stream's key as a bearer token (OBS's WHIP); a stream with
    /// a key is not open to anonymous publishers there either.
    @Test func aStreamKeyIsABearerTokenForWHIP() async throws {
        var auth = AuthSettings()
        auth.anonymous = [AccessPermission(action: .publish)]
        let streams = AccessStreams(publishKeys: { stream, door in door == .webrtc && stream == "phone1" ? ["phone1-key-2"] : [] })
        let a = try await Authorizer(auth: auth, allowedHosts: nil, streams: streams)
        func whip(_ c: AccessCredentials, _ stream: String = "phone1") async -> String {
            Self.label(await a.authorize(AccessRequest(c, .publish, stream: stream, door: .webrtc, peer: "192.0.2.1")))
        }
        #expect(await whip(.header("Bearer phone1-key-2")) == "allowed:publish key")
        #expect(await whip(.none) == "401")
        #expect(await whip(.header("Bearer not-the-key")) == "401")
        #expect(await whip(.none, "phone2") == "allowed:anonymous")
    }

    /// A rendition is read by whoever may read its parent, through every door; nothing else is.
    @Test func renditionsFollowTheirParentAtEveryDoor() async throws {
        var auth = AuthSettings()
        auth.users = [AccessUser(name: "cam-only", passwordHash: Self.hash, permissions: [AccessPermission(action: .read, streams: "cam")])]
        let streams = AccessStreams(parent: { ["cam_240p": "cam", "lobby_240p": "lobby"][$0] })
        let a = try await Authorizer(auth: auth, allowedHosts: nil, streams: streams)
        let user = Self.basic("cam-only", "pw-viewer")
        for door in AccessProtocol.allCases {
            for (stream, want) in [("cam", "allowed:cam-only"), ("cam_240p", "allowed:cam-only"), ("lobby", "403"), ("lobby_240p", "403")] {
                for action in AccessAction.allCases {
                    let got = Self.label(await a.authorize(AccessRequest(user, action, stream: stream, door: door, peer: "192.0.2.1")))
                    #expect(got == (action == .read ? want : "403"), "\(door) \(action) \(stream)")
                }
            }
        }
    }

    /// Behind a trusted proxy, the forwarded client is the one limited; a forged header from
    /// anyone else is ignored.
    @Test func behindATrustedProxyTheForwardedClientCounts() async throws {
        var auth = AuthSettings()
        auth.users = [AccessUser(name: "viewer", passwordHash: Self.hash, permissions: [AccessPermission(action: .read)])]
        let a = try await Authorizer(auth: auth, allowedHosts: nil, trustedProxies: TrustedProxies([IPNetwork("127.0.0.1")!, IPNetwork("10.0.0.0/8")!]))
        func read(_ password: String, peer: String, forwarded: String?) async -> String {
            Self.label(await a.authorize(AccessRequest(Self.basic("viewer", password), .read, stream: "cam", door: .http, peer: peer, forwardedFor: forwarded)))
        }
        for _ in 0..<10 { _ = await read("nope", peer: "127.0.0.1", forwarded: "198.51.100.66") }
        #expect(await read("pw-viewer", peer: "127.0.0.1", forwarded: "198.51.100.66") == "429")
        #expect(await read("pw-viewer", peer: "127.0.0.1", forwarded: "198.51.100.7") == "allowed:viewer")
        // The nearest untrusted hop: a client that writes its own header still meets its own limit.
        #expect(await read("pw-viewer", peer: "127.0.0.1", forwarded: "203.0.113.1, 198.51.100.66, 10.1.2.3") == "429")
        #expect(a.client(of: AccessRequest(.none, .read, stream: nil, door: .http, peer: "192.0.2.5", forwardedFor: "198.51.100.66")) == "192.0.2.5")
        #expect(a.client(of: AccessRequest(.none, .read, stream: nil, door: .http, peer: "127.0.0.1", forwardedFor: "unknown, 10.0.0.1")) == "10.0.0.1")
    }

    @Test func withoutAnAuthSectionEveryoneMay() async throws {
        let a = try await Authorizer(auth: nil, allowedHosts: nil)
        #expect(!a.isEnabled)
        for action in AccessAction.allCases {
            #expect(await a.authorize(.none, action, stream: "x", from: "203.0.113.9") == .allowed(nil))
        }
    }
}
