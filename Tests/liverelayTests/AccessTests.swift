import Testing
import Foundation
import JWTKit
import TestSupport
import Glibc

/// Users, permissions and HTTPS as a user meets them: `liverelay serve` with an `auth`
/// section, asked by curl and ffmpeg.
@Suite(.ownThreads, .serialized) struct AccessTests {
    static func hash(_ password: String) throws -> String {
        let dir = Paths.tempDirectory("pw")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pw")
        try password.write(to: file, atomically: true, encoding: .utf8)
        let r = try ChildProcess.run("/bin/sh", ["-c", "\(Paths.liverelay) password --cost 10 < \(file.path)"], timeout: 20)
        let h = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard r.status == 0, h.hasPrefix("$2b$10$") else { throw Servers.ServerError("liverelay password: \(r.output)") }
        return h
    }

    static func start(_ yaml: String, extraArgs: [String] = []) throws -> (ChildProcess, Int, URL) {
        try Servers.serve(yaml, arguments: extraArgs)
    }

    static func code(_ args: [String]) throws -> String {
        try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"] + args, timeout: 15).stdout
    }

    static let streams = """
    streams:
      cam-1:
        source: testsrc://?size=320x180&fps=15&gop=15
        hls: {variant: mpegts, segment_duration: 1s}
      lobby:
        source: testsrc://?size=320x180&fps=15&gop=15
    """

    /// Every endpoint × every kind of client: the expected 200/401/403, and no secret in the log.
    @Test func thePermissionMatrixHolds() throws {
        let pw = ["ops": "ops-secret-1", "other": "other-secret-2", "admin": "admin-secret-3", "prom": "prom-secret-4"]
        let h = try pw.mapValues { try Self.hash($0) }
        let (serve, port, dir) = try Self.start("""
        auth:
          users:
            - {name: ops, password: "\(h["ops"]!)", permissions: [{action: read, streams: "cam-*"}]}
            - {name: other, password: "\(h["other"]!)", permissions: [{action: read, streams: lobby}]}
            - {name: admin, password: "\(h["admin"]!)", permissions: [admin, read, metrics]}
            - {name: prom, password: "\(h["prom"]!)", permissions: [metrics]}
          anonymous: []
        \(Self.streams)
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)"
        usleep(1_500_000)
        let who: [(String, [String])] = [("anonymous", []), ("other", ["-u", "other:\(pw["other"]!)"]), ("ops", ["-u", "ops:\(pw["ops"]!)"]),
                                         ("admin", ["-u", "admin:\(pw["admin"]!)"]), ("prom", ["-u", "prom:\(pw["prom"]!)"])]
        let patch = ["-X", "PATCH", "-d", "{\"depth\":2}"]
        // endpoint, extra curl arguments, expected code for anonymous, other, ops, admin, prom
        let matrix: [(String, [String], [String])] = [
            ("/healthz", [], ["200", "200", "200", "200", "200"]),
            ("/", [], ["401", "200", "200", "200", "403"]),
            ("/api/streams", [], ["401", "200", "200", "200", "403"]),
            ("/api/streams/cam-1", [], ["401", "403", "200", "200", "403"]),
            ("/streams/cam-1/snapshot.jpg", [], ["401", "403", "200", "200", "403"]),
            ("/streams/lobby/snapshot.jpg", [], ["401", "200", "403", "200", "403"]),
            ("/streams/cam-1/hls/index.m3u8", [], ["401", "403", "200", "200", "403"]),
            ("/streams/cam-1/meta.json", [], ["401", "403", "200", "200", "403"]),
            ("/api/streams/cam-1/sinks/preview", patch, ["401", "403", "403", "200", "403"]),
            ("/metrics", [], ["401", "403", "403", "200", "200"]),
        ]
        for (path, extra, expected) in matrix {
            for (i, (name, credentials)) in who.enumerated() {
                let got = try Self.code(credentials + extra + [base + path])
                #expect(got == expected[i], "\(name) \(extra.first ?? "GET") \(path): \(got), expected \(expected[i])")
            }
        }
        // Lists show only what the client may read.
        let list = try ChildProcess.run("/usr/bin/curl", ["-s", "-u", "ops:\(pw["ops"]!)", base + "/api/streams"], timeout: 10).stdout
        #expect(list.contains("\"cam-1\"") && !list.contains("\"lobby\""))
        // Failed logins are counted; no password appears in any output.
        _ = try Self.code(["-u", "ops:wrong", base + "/"])
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "-u", "prom:\(pw["prom"]!)", base + "/metrics"], timeout: 10).stdout
        #expect(metrics.contains("liverelay_auth_failures_total"))
        serve.stop()
        for secret in pw.values { #expect(!(serve.stdout + serve.stderr).contains(secret)) }
    }

    @Test func failedLoginsAreLimitedPerClientAndUser() throws {
        let (serve, port, dir) = try Self.start("""
        auth:
          users: [{name: ops, password: "\(try Self.hash("right-one"))", permissions: [read]}]
        \(Self.streams)
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)/api/streams"
        for _ in 0..<10 { #expect(try Self.code(["-u", "ops:nope", base]) == "401") }
        // The eleventh try of this user from this address is refused before the password is checked.
        #expect(try Self.code(["-u", "ops:right-one", base]) == "429")
        #expect(try Self.code([base.replacingOccurrences(of: "/api/streams", with: "/healthz")]) == "200")
    }

    @Test func beyondLoopbackWithoutAuthRefusesToStart() throws {
        let dir = Paths.tempDirectory("exposed")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("c.yaml")
        try Self.streams.write(to: file, atomically: true, encoding: .utf8)
        let r = try ChildProcess.run(Paths.liverelay, ["serve", "--config", file.path, "--listen", "0.0.0.0:\(FreePort.tcp())", "--state-dir", file.deletingLastPathComponent().path], timeout: 20)
        #expect(r.status == 2)
        #expect(r.stderr.contains("auth") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        // Opening reading on purpose is allowed.
        try ("auth: {anonymous: [read]}\n" + Self.streams).write(to: file, atomically: true, encoding: .utf8)
        let open = try ChildProcess(Paths.liverelay, ["serve", "--config", file.path, "--listen", "0.0.0.0:0", "--state-dir", file.deletingLastPathComponent().path])
        defer { open.stop() }
        let port = try #require(open.listeningPort("LiveRelay listening on", timeout: 30), "no HTTP server: \(open.stderr.suffix(500))")
        #expect(try Self.code(["http://127.0.0.1:\(port)/api/streams"]) == "200")
        #expect(try Self.code(["-X", "PATCH", "-d", "{}", "http://127.0.0.1:\(port)/api/streams/cam-1/sinks/preview"]) == "401")
    }

    @Test func aForeignHostHeaderIsRefusedOnLoopback() throws {
        let (serve, port, dir) = try Self.start(Self.streams)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let url = "http://127.0.0.1:\(port)/api/streams"
        #expect(try Self.code([url]) == "200")
        #expect(try Self.code(["-H", "Host: localhost:\(port)", url]) == "200")
        // A page on attacker.example whose name now points at 127.0.0.1 (DNS rebinding).
        #expect(try Self.code(["-H", "Host: attacker.example", url]) == "421")
    }

    /// HTTPS with HTTP/2 (curl negotiates h2 by ALPN) and a JWT in a media URL that ffmpeg, which
    /// cannot add a header, plays: the playlist carries the token on to its segments.
    @Test func httpsNegotiatesHTTP2AndATokenInTheURLPlaysInFFmpeg() async throws {
        let dir = Paths.tempDirectory("tls")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cert, key) = try Servers.selfSignedCertificate(in: dir)
        // A JWKS with one P-256 key; tokens signed with its private half.
        let signing = ES256PrivateKey()
        let p = try #require(signing.publicKey.parameters)
        let jwks = dir.appendingPathComponent("keys.json")
        try "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"alg\":\"ES256\",\"kid\":\"k1\",\"x\":\"\(p.x)\",\"y\":\"\(p.y)\"}]}"
            .write(to: jwks, atomically: true, encoding: .utf8)
        let keys = await JWTKeyCollection().add(ecdsa: signing, kid: "k1")
        let token = try await keys.sign(Grants(sub: "viewer", exp: .init(value: Date().addingTimeInterval(600)),
                                               liverelay_permissions: [.init(action: "read", streams: "cam-*")]), kid: "k1")
        let (serve, port, sdir) = try Self.start("""
        server:
          tls: {cert: \(cert), key: \(key)}
        auth:
          jwt: {jwks: \(jwks.path)}
        \(Self.streams)
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: sdir) }
        let base = "https://127.0.0.1:\(port)"
        let h2 = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "--cacert", cert, "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                                                        "-H", "Authorization: Bearer \(token)", base + "/api/streams/cam-1"], timeout: 15)
        #expect(h2.stdout == "2 200", "\(h2.output)")
        #expect(try Self.code(["--cacert", cert, base + "/api/streams/cam-1"]) == "401")
        // The token in the query is taken on media URLs only.
        #expect(try Self.code(["--cacert", cert, base + "/api/streams/cam-1?token=\(token)"]) == "401")
        #expect(try Self.code(["--cacert", cert, base + "/streams/lobby/snapshot.jpg?token=\(token)"]) == "403")
        try await Task.sleep(for: .seconds(3))
        let ff = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-tls_verify", "0", "-i", base + "/streams/cam-1/hls/index.m3u8?token=\(token)",
                                                          "-frames:v", "20", "-f", "null", "-"], timeout: 30)
        #expect(ff.status == 0, "ffmpeg: \(ff.stderr)")
        serve.stop()
        #expect(!(serve.stdout + serve.stderr).contains(token))
    }

    /// A renewed certificate goes live on SIGHUP: new connections get it, a viewer already
    /// watching over the old one keeps its stream.
    @Test(.tags(.exclusive)) func sighupReloadsTheCertificateWithoutDroppingViewers() async throws {
        let dir = Paths.tempDirectory("reload")
        defer { try? FileManager.default.removeItem(at: dir) }
        func makeCert(_ name: String) throws -> (String, String) { try Servers.selfSignedCertificate(in: dir, name: name) }
        let (c1, k1) = try makeCert("first"), (c2, k2) = try makeCert("second")
        let live = (dir.appendingPathComponent("live-c.pem"), dir.appendingPathComponent("live-k.pem"))
        try FileManager.default.copyItem(atPath: c1, toPath: live.0.path)
        try FileManager.default.copyItem(atPath: k1, toPath: live.1.path)
        let (serve, port, sdir) = try Self.start("server:\n  tls: {cert: \(live.0.path), key: \(live.1.path)}\n" + Self.streams)
        defer { serve.stop(); try? FileManager.default.removeItem(at: sdir) }
        func subject() throws -> String {
            try ChildProcess.run("/bin/sh", ["-c", "echo | openssl s_client -connect 127.0.0.1:\(port) 2>/dev/null | openssl x509 -noout -subject"], timeout: 15).stdout
        }
        #expect(try subject().contains("first"))
        let viewer = try ChildProcess("/usr/bin/curl", ["-sk", "--max-time", "5", "-o", dir.appendingPathComponent("mjpg").path, "https://127.0.0.1:\(port)/streams/cam-1/preview.mjpg"])
        try await Task.sleep(for: .seconds(1))
        let before = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("mjpg").path)[.size] as? Int) ?? 0
        try FileManager.default.removeItem(at: live.0); try FileManager.default.copyItem(atPath: c2, toPath: live.0.path)
        try FileManager.default.removeItem(at: live.1); try FileManager.default.copyItem(atPath: k2, toPath: live.1.path)
        kill(serve.process.processIdentifier, SIGHUP)
        try await Task.sleep(for: .seconds(1))
        #expect(try subject().contains("second"))
        _ = viewer.wait(timeout: 10)
        let after = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("mjpg").path)[.size] as? Int) ?? 0
        #expect(after > before + 10_000, "the viewer's stream stopped at the reload: \(before) → \(after) bytes")
        #expect(serve.exitStatus == nil, "serve exited on SIGHUP")
    }

    struct Grants: JWTPayload {
        struct Grant: Codable { var action: String; var streams: String? }
        var sub: String
        var exp: ExpirationClaim
        var liverelay_permissions: [Grant]
        func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
    }
}
