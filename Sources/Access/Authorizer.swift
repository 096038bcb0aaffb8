import Foundation
public import Relay
import HummingbirdBcrypt
import JWTKit
import Crypto
import MediaCore
import Synchronization
import Wire
public import Logging

/// The one answer to "may these credentials do this action on this stream from this address",
/// for HTTP, WebSocket, RTSP, RTMP and SRT alike. Each server adapts its own credential form
/// (an `Authorization` header, `?user=&pass=`, a token) to `Credentials`; none of them knows
/// users, hashes, tokens or the failed-login limit.
///
/// Checks credentials against the `auth` section: Basic (bcrypt), Bearer and `?token=` (JWTs
/// from the configured JWKS). Remembers good credentials for a while (bcrypt costs ~0.25 s a
/// check by design), and limits failed attempts per client address.
public final class Authorizer: Sendable {
    /// What a client presented.
    public enum Credentials: Sendable, Hashable {
        case none
        /// An HTTP or RTSP `Authorization` header (`Basic …`, `Bearer …`).
        case header(String)
        /// A user and password given another way (RTMP's `?user=&pass=`).
        case userPassword(user: String, password: String)
        /// A bearer token given without a header (`?token=` on media URLs).
        case token(String)
        /// A signed media URL of `stream` (`?expires=UNIX&signature=HEX`, `auth.signed_urls`).
        case signedURL(stream: String, expires: String, signature: String)
    }

    /// The answer.
    public enum Decision: Sendable, Equatable {
        /// Allowed; the identity is nil when no `auth` section exists (everyone may).
        case allowed(AccessIdentity?)
        /// No credentials where some are needed, or wrong ones (the reason says which).
        case unauthorized(String)
        /// Right credentials that do not grant it.
        case forbidden(AccessIdentity)
        /// Too many failed logins from this address lately.
        case limited
    }

    public let auth: AuthSettings?
    /// Host names the HTTP server answers for (DNS rebinding); nil: any.
    public let allowedHosts: Set<String>?
    private let jwt: JWTVerifier?
    /// Credentials checked good recently → when to check them again.
    private let verified = Mutex<[String: UInt64]>([:])
    private let inFlight = Mutex<[String: Task<Bool, Never>]>([:])
    private let failures = Mutex<[String: (count: Int, since: UInt64)]>([:])
    private let failureTotal = Atomic<Int>(0)
    private let limitedTotal = Atomic<Int>(0)

    /// Failed attempts allowed per client address in `failureWindow` before it gets 429s.
    static let failureLimit = 10
    static let failureWindowNanos: UInt64 = 60_000_000_000
    static let verifiedForNanos: UInt64 = 300_000_000_000

    public init(auth: AuthSettings?, allowedHosts: Set<String>?, logger: Logger = Logger(label: "liverelay.auth")) async throws {
        self.auth = auth
        self.allowedHosts = allowedHosts
        if let settings = auth?.jwt { jwt = try await JWTVerifier(settings: settings, logger: logger) } else { jwt = nil }
    }

    /// Failed logins so far (for `/metrics`).
    public var failedLogins: Int { failureTotal.load(ordering: .relaxed) }
    /// Requests refused for too many failures.
    public var rateLimited: Int { limitedTotal.load(ordering: .relaxed) }
    /// An `auth` section exists: credentials are checked.
    public var isEnabled: Bool { auth != nil }

    /// May `credentials`, from `client` (an address), do `action` on `stream` (nil: not about
    /// one stream, e.g. the stream list)? Wrong credentials count as a failed login of the address.
    public func authorize(_ credentials: Credentials, _ action: AccessAction, stream: String?, from client: String) async -> Decision {
        guard auth != nil else { return .allowed(nil) }
        if isLimited(client) { return .limited }
        switch await identify(credentials) {
        case .refused:
            recordFailure(client)
            return .unauthorized("wrong credentials")
        case .anonymous:
            let anonymous = anonymousIdentity
            return anonymous.may(action, stream: stream) ? .allowed(anonymous) : .unauthorized("credentials needed")
        case .identified(let identity):
            return identity.may(action, stream: stream) ? .allowed(identity) : .forbidden(identity)
        }
    }

    enum Outcome {
        /// No credentials: the anonymous grants apply.
        case anonymous
        case identified(AccessIdentity)
        /// Credentials given, and wrong.
        case refused
    }

    /// Who the credentials say it is.
    func identify(_ credentials: Credentials) async -> Outcome {
        guard let auth else { return .anonymous }
        switch credentials {
        case .none: return .anonymous
        case .token(let token): return await bearer(token)
        case .signedURL(let stream, let expires, let signature):
            return Self.checkSignedURL(stream: stream, expires: expires, signature: signature, secret: auth.signedURLSecret, now: Date())
        case .userPassword(let user, let password): return await basic(user: user, password: password, key: "u:" + user + "\u{0}" + password, auth)
        case .header(let header):
            if header.hasPrefix("Bearer ") { return await bearer(String(header.dropFirst(7))) }
            guard header.hasPrefix("Basic "),
                  let data = Data(base64Encoded: String(header.dropFirst(6))),
                  let text = String(data: data, encoding: .utf8),
                  let colon = text.firstIndex(of: ":") else { return .refused }
            return await basic(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]), key: header, auth)
        }
    }

    private func basic(user name: String, password: String, key: String, _ auth: AuthSettings) async -> Outcome {
        guard let user = auth.user(named: name) else { return .refused }
        let now = MonotonicClock.nanoseconds()
        if let until = verified.withLock({ $0[key] }), until > now {
            return .identified(AccessIdentity(name: user.name, permissions: user.permissions))
        }
        guard await verify(key: key, password: password, hash: user.passwordHash) else { return .refused }
        verified.withLock { v in
            if v.count > 1024 { v = v.filter { $0.value > now } }
            if v.count <= 1024 { v[key] = now + Self.verifiedForNanos }
        }
        return .identified(AccessIdentity(name: user.name, permissions: user.permissions))
    }

    /// bcrypt takes ~0.25 s by design: it runs on a thread of Dispatch's, never on the
    /// cooperative pool (two threads here, which every request shares), and concurrent checks of
    /// the same credentials (a page's first requests) share one run.
    private func verify(key: String, password: String, hash: String) async -> Bool {
        let task: Task<Bool, Never> = inFlight.withLock { f in
            if let t = f[key] { return t }
            let t = Task<Bool, Never> {
                await withCheckedContinuation { c in
                    DispatchQueue.global().async { c.resume(returning: Bcrypt.verify(password, hash: hash)) }
                }
            }
            f[key] = t
            return t
        }
        let ok = await task.value
        inFlight.withLock { $0[key] = nil }
        return ok
    }

    private func bearer(_ token: String) async -> Outcome {
        guard let jwt, let identity = await jwt.identity(token) else { return .refused }
        return .identified(identity)
    }

    /// True when this client address has failed too often lately.
    private func isLimited(_ client: String) -> Bool {
        let now = MonotonicClock.nanoseconds()
        let limited = failures.withLock { f -> Bool in
            guard let e = f[client] else { return false }
            if now - e.since > Self.failureWindowNanos { f[client] = nil; return false }
            return e.count >= Self.failureLimit
        }
        if limited { limitedTotal.add(1, ordering: .relaxed) }
        return limited
    }

    private func recordFailure(_ client: String) {
        failureTotal.add(1, ordering: .relaxed)
        let now = MonotonicClock.nanoseconds()
        failures.withLock { f in
            if f.count > 10_000 { f = f.filter { now - $0.value.since <= Self.failureWindowNanos } }
            if let e = f[client], now - e.since <= Self.failureWindowNanos {
                f[client] = (e.count + 1, e.since)
            } else {
                f[client] = (1, now)
            }
        }
    }

    /// The grants without credentials.
    var anonymousIdentity: AccessIdentity {
        AccessIdentity(name: "anonymous", permissions: auth?.anonymous ?? [])
    }
}

/// Verifies JWTs against a JWKS and reads their permissions claim. A JWKS file is read at
/// start; a JWKS URL is fetched at start and every `refresh` seconds (bounded: 5 s, 1 MiB). A
/// fetch that fails, or brings a set with no usable key, keeps the keys in hand.
final class JWTVerifier: Sendable {
    let settings: JWTSettings
    private let keys: Mutex<JWTKeyCollection>
    private let logger: Logger
    static let maxJWKSBytes = 1 << 20
    static let maxKeys = 64
    /// 8192 bits: 1024 bytes, 1366 characters of base64url.
    static let maxModulusBase64 = 1366

    init(settings: JWTSettings, logger: Logger) async throws {
        self.settings = settings
        self.logger = logger
        keys = Mutex(JWTKeyCollection())
        if settings.isURL {
            if let problem = await fetch() {
                logger.warning("auth: cannot load the JWKS yet; tokens are refused until it loads", metadata: ["error": "\(problem)"])
            }
            // Keys rotate at the identity provider: fetched again on a timer, for as long as
            // this verifier is in use.
            let every = settings.refresh
            Task { [weak self] in
                while true {
                    try? await Task.sleep(for: .seconds(every))
                    guard let self else { return }
                    if let problem = await self.fetch() {
                        self.logger.warning("auth: JWKS fetch failed; keeping the keys in hand", metadata: ["error": "\(problem)"])
                    }
                }
            }
        } else {
            let json = try String(contentsOfFile: settings.jwks, encoding: .utf8)
            let k = JWTKeyCollection()
            try await k.add(jwksJSON: json)
            keys.withLock { $0 = k }
        }
    }

    /// Fetches the JWKS and, when it holds usable keys, replaces the keys; the problem otherwise.
    private func fetch() async -> String? {
        let url = Redactor.redact(settings.jwks)
        switch await BoundedHTTP.send(method: "GET", url: settings.jwks, headers: [("Accept", "application/json")], timeout: 5, maxBody: Self.maxJWKSBytes) {
        case .failure(let f):
            return "\(url): \(Redactor.scrub(f.description))"
        case .success(let answer) where answer.status != 200:
            return "\(url): HTTP \(answer.status)"
        case .success(let answer):
            // Bytes that are not UTF-8 are not a JWKS; the decoder sees only valid text.
            guard let json = String(validating: answer.body, as: UTF8.self) else { return "\(url): not UTF-8 text" }
            // A key set is four levels deep; a decoder would spend seconds on 100 000.
            guard JSONDepth.deepest(answer.body, limit: 16) <= 16 else { return "\(url): nested deeper than a JWKS" }
            struct Shape: Decodable { struct Key: Decodable { let kty: String; let n: String? }; let keys: [Key] }
            guard let shape = try? JSONDecoder().decode(Shape.self, from: Data(answer.body)), !shape.keys.isEmpty else {
                return "\(url): not a JWKS with keys"
            }
            // Identity providers publish a handful of keys of 2048-4096 bits; loading thousands,
            // or a 65 536-bit RSA modulus, holds a thread for seconds.
            guard shape.keys.count <= Self.maxKeys else { return "\(url): more than \(Self.maxKeys) keys" }
            guard shape.keys.allSatisfy({ ($0.n?.utf8.count ?? 0) <= Self.maxModulusBase64 }) else {
                return "\(url): an RSA key larger than 8192 bits"
            }
            let k = JWTKeyCollection()
            do {
                try await k.add(jwksJSON: json)
            } catch {
                return "\(url): not a usable JWKS (\(String(describing: error).prefix(200)))"
            }
            keys.withLock { $0 = k }
            return nil
        }
    }

    /// One `{action, streams}` of the permissions claim.
    struct Grant: Codable, Sendable {
        var action: String
        var streams: String?
    }

    /// The identity a valid token carries; nil for anything invalid, expired or not ours.
    func identity(_ token: String) async -> AccessIdentity? {
        // `verify` checks the signature and, in PermissionsPayload.verify, the expiry.
        let keys = keys.withLock { $0 }
        guard let payload = try? await keys.verify(token, as: PermissionsPayload.self) else { return nil }
        if let issuer = settings.issuer, payload.iss != issuer { return nil }
        if let audience = settings.audience, !(payload.aud ?? []).contains(audience) { return nil }
        let grants = payload.claims[settings.claim] ?? []
        let permissions = grants.compactMap { g in AccessAction(rawValue: g.action).map { AccessPermission(action: $0, streams: g.streams) } }
        return AccessIdentity(name: payload.sub ?? "token", permissions: permissions)
    }
}

/// A JWT payload whose permissions claim has a configurable name: decoded by hand.
struct PermissionsPayload: JWTPayload {
    var sub: String?
    var iss: String?
    var aud: [String]?
    var exp: ExpirationClaim
    var claims: [String: [JWTVerifier.Grant]]

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        sub = try c.decodeIfPresent(String.self, forKey: Key(stringValue: "sub"))
        iss = try c.decodeIfPresent(String.self, forKey: Key(stringValue: "iss"))
        if let one = try? c.decodeIfPresent(String.self, forKey: Key(stringValue: "aud")) {
            aud = [one]
        } else {
            aud = try c.decodeIfPresent([String].self, forKey: Key(stringValue: "aud"))
        }
        exp = try c.decode(ExpirationClaim.self, forKey: Key(stringValue: "exp"))
        var found: [String: [JWTVerifier.Grant]] = [:]
        for key in c.allKeys where !["sub", "iss", "aud", "exp", "iat", "nbf", "jti"].contains(key.stringValue) {
            if let g = try? c.decode([JWTVerifier.Grant].self, forKey: key) { found[key.stringValue] = g }
        }
        claims = found
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(sub, forKey: Key(stringValue: "sub"))
        try c.encodeIfPresent(iss, forKey: Key(stringValue: "iss"))
        try c.encodeIfPresent(aud, forKey: Key(stringValue: "aud"))
        try c.encode(exp, forKey: Key(stringValue: "exp"))
        for (k, v) in claims { try c.encode(v, forKey: Key(stringValue: k)) }
    }

    func verify(using algorithm: some JWTAlgorithm) throws {
        try exp.verifyNotExpired()
    }
}

extension Authorizer {
    /// The signature of a stream's media URLs until `expires` (Unix seconds): hex HMAC-SHA256 of
    /// `/streams/NAME/`, a newline and the expiry, under `secret`. A web application computes the
    /// same (`liverelay sign`, or openssl) and hands viewers `…?expires=E&signature=S`.
    public static func signature(stream: String, expires: Int, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("/streams/\(stream)/\n\(expires)".utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return mac.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
    }

    /// A signed URL grants reading its stream until it expires; a wrong or expired one is refused.
    static func checkSignedURL(stream: String, expires: String, signature: String, secret: String?, now: Date) -> Outcome {
        guard let secret, let until = PeerNumber.integer(expires, in: 0...Int(UInt32.max)) else { return .refused }
        guard Double(until) >= now.timeIntervalSince1970 else { return .refused }
        let expected = Array(Self.signature(stream: stream, expires: until, secret: secret).utf8)
        let given = Array(signature.lowercased().utf8)
        // Constant time: every byte compared whatever the first difference.
        guard given.count == expected.count else { return .refused }
        var difference: UInt8 = 0
        for (a, b) in zip(given, expected) { difference |= a ^ b }
        guard difference == 0 else { return .refused }
        return .identified(AccessIdentity(name: "signed URL", permissions: [AccessPermission(action: .read, streams: stream)]))
    }
}
