public import Foundation
import HummingbirdBcrypt
import Crypto
import Synchronization
import Wire
public import Logging

/// The one answer to "may these credentials do this action on this stream from this client",
/// for HTTP, WebSocket, RTSP, RTMP, SRT and WebRTC alike. Each server adapts its own credential
/// form (an `Authorization` header, `?user=&pass=`, a publish key, a token) to an
/// `AccessRequest`; none of them knows users, hashes, keys, tokens or the failure limit.
///
/// Checks credentials against the `auth` section: Basic (bcrypt), Bearer and `?token=` (JWTs
/// from the configured JWKS), signed URLs, and the publish keys of a stream (`AccessStreams`).
/// A rendition may be read by whoever may read the stream it is made from. Remembers good
/// credentials for a while (bcrypt costs ~0.25 s a check by design). Every wrong credential,
/// of any kind, counts toward the failure limit of its client and principal (`FailureLimiter`).
public final class Authorizer: Sendable {
    public typealias Credentials = AccessCredentials
    public typealias Decision = AccessDecision

    public let auth: AuthSettings?
    /// Host names the HTTP server answers for (DNS rebinding); nil: any.
    public let allowedHosts: Set<String>?
    public let trustedProxies: TrustedProxies
    let streams: AccessStreams
    private let jwt: JWTVerifier?
    /// Credentials checked good recently → when to check them again.
    private let verified = Mutex<[String: UInt64]>([:])
    private let inFlight = Mutex<[String: Task<Bool, Never>]>([:])
    private let limiter: FailureLimiter
    /// Monotonic nanoseconds (a test's own clock where it waits for the window).
    private let now: @Sendable () -> UInt64

    /// Failed attempts allowed per client and principal in the window before they are refused.
    public static let failureLimit = 10
    static let failureWindowNanos: UInt64 = 60_000_000_000
    static let verifiedForNanos: UInt64 = 300_000_000_000

    public init(auth: AuthSettings?, allowedHosts: Set<String>?, trustedProxies: TrustedProxies = TrustedProxies(),
                streams: AccessStreams = AccessStreams(), fetchJWKS: JWKSFetch? = nil,
                logger: Logger = Logger(label: "liverelay.auth"),
                clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) async throws {
        self.auth = auth
        self.allowedHosts = allowedHosts
        self.trustedProxies = trustedProxies
        self.streams = streams
        self.now = clock
        limiter = FailureLimiter(limit: Self.failureLimit, windowNanos: Self.failureWindowNanos)
        if let settings = auth?.jwt { jwt = try await JWTVerifier(settings: settings, fetch: fetchJWKS, logger: logger) } else { jwt = nil }
    }

    /// Wrong credentials so far, of every kind (for `/metrics`).
    public var failedLogins: Int { limiter.failures }
    /// Attempts refused for too many failures.
    public var rateLimited: Int { limiter.refusals }
    /// An `auth` section exists: credentials are checked.
    public var isEnabled: Bool { auth != nil }

    /// The client a request is judged as (the forwarded one behind a trusted proxy).
    public func client(of request: AccessRequest) -> String {
        trustedProxies.client(peer: request.peer, forwardedFor: request.forwardedFor)
    }

    /// Who the failure limit counts: an IPv4 client by its address, an IPv6 client by its /64
    /// (one subscriber's network: a host there takes any of its 2^64 addresses at will, so
    /// counting per address would hand out fresh guesses for free).
    public static func limited(_ client: String) -> String {
        guard let ip = IPAddress(client)?.unmapped, ip.bytes.count == 16 else { return client }
        return IPNetwork(containing: ip, prefix: 64).description
    }

    /// The decision on one request.
    public func authorize(_ request: AccessRequest) async -> Decision {
        let keys = request.action == .publish && request.stream != nil ? streams.publishKeys(request.stream ?? "", request.door) : []
        if auth == nil && keys.isEmpty { return .allowed(nil) }
        let key = request.credentials.principal(keys: keys).map { FailureLimiter.Key(client: Self.limited(client(of: request)), principal: $0) }
        if let key, limiter.isLimited(key, now: now()) { return .limited }
        let outcome: Outcome
        if case .publishKey(let given) = request.credentials, !keys.isEmpty {
            outcome = keys.contains { Self.constantTimeEqual($0, given) } ? .identified(Self.keyHolder(request.stream ?? "")) : .refused
        } else if !keys.isEmpty, case .header(let h) = request.credentials, h.hasPrefix("Bearer "),
                  keys.contains(where: { Self.constantTimeEqual($0, String(h.dropFirst(7))) }) {
            // A stream key as a bearer token (OBS's WHIP): a token that is not one is a JWT.
            outcome = .identified(Self.keyHolder(request.stream ?? ""))
        } else if auth == nil {
            // Keys are needed here, and no users exist to stand in for them.
            if case .none = request.credentials { return .unauthorized("a publish key is needed") }
            outcome = .refused
        } else {
            outcome = await identify(request.credentials, stream: request.stream, limitedAs: key)
        }
        switch outcome {
        case .limited:
            return .limited
        case .refused:
            if let key { limiter.recordFailure(key, now: now()) }
            return .unauthorized("wrong credentials")
        case .refusedCounted:
            return .unauthorized("wrong credentials")
        case .anonymous:
            // A key was needed and not given (or given where none opens the stream).
            if !keys.isEmpty { return .unauthorized("a publish key is needed") }
            let anonymous = anonymousIdentity
            return permits(anonymous, request.action, stream: request.stream) ? .allowed(anonymous) : .unauthorized("credentials needed")
        case .identified(let identity):
            return permits(identity, request.action, stream: request.stream) ? .allowed(identity) : .forbidden(identity)
        }
    }

    /// The same question in the old shape, for HTTP and RTSP callers that have no door-specific
    /// credentials.
    public func authorize(_ credentials: Credentials, _ action: AccessAction, stream: String?, door: AccessProtocol = .http,
                          from client: String, forwardedFor: String? = nil) async -> Decision {
        await authorize(AccessRequest(credentials, action, stream: stream, door: door, peer: client, forwardedFor: forwardedFor))
    }

    /// Whether `identity` may do `action` on `stream`: on the stream itself, or, for a rendition,
    /// on the stream it is made from (the same pictures). Also what lists, pages and the wall
    /// ask of an identity the authorizer gave. Nil (no `auth` section): everything.
    public func permits(_ identity: AccessIdentity?, _ action: AccessAction, stream: String?) -> Bool {
        guard let identity else { return auth == nil }
        if identity.may(action, stream: stream) { return true }
        guard let s = stream, let parent = streams.parent(s) else { return false }
        return identity.may(action, stream: parent)
    }

    // MARK: Secrets checked by someone else

    /// What an SRT caller publishing `request.stream` must give in its handshake, where libsrt
    /// (not LiveRelay) compares the passphrase. `.limited` while this client's wrong
    /// passphrases for the stream are at the limit.
    public enum SharedSecret: Sendable, Equatable {
        /// The passphrase to set on the caller's socket; `attempt(succeeded:)` must follow.
        case passphrase(String)
        /// None needed: anyone may publish here.
        case open
        case limited
        /// No passphrase opens it: a user (in the stream ID) is needed.
        case refused
    }

    /// Decides the passphrase for a caller (`request.credentials` is ignored) and, when one is
    /// needed, counts the caller (`attempt`: its address and port) as a wrong passphrase until
    /// `attemptSucceeded(attempt)` says it arrived.
    ///
    /// A reader (`request.action == .read`) needs its stream's read passphrase when it has one;
    /// else it is open where anonymous reading is granted, and, with no `auth` section at all,
    /// only to a client on loopback (nothing beyond loopback reads without `auth`).
    public func sharedSecret(_ request: AccessRequest, attempt: String) -> SharedSecret {
        guard let stream = request.stream else { return .refused }
        let reading = request.action == .read
        let keys = reading ? streams.readPassphrase(stream).map { [$0] } ?? [] : streams.publishKeys(stream, request.door)
        if let phrase = keys.first {
            // Counted as a wrong passphrase now, taken back when the caller arrives: a flood of
            // handshakes meets the limit as it comes.
            let key = FailureLimiter.Key(client: Self.limited(client(of: request)), principal: AccessCredentials.keyPrincipal(keys))
            return limiter.expect(attempt, key, now: now()) ? .passphrase(phrase) : .limited
        }
        if reading && auth == nil { return IPAddress(client(of: request))?.isLoopback == true ? .open : .refused }
        if auth == nil || auth?.anonymous.contains(where: { $0.grants(request.action, stream: stream) }) == true { return .open }
        return .refused
    }

    /// The caller expected under `attempt` completed its handshake.
    public func attemptSucceeded(_ attempt: String) {
        limiter.confirm(attempt, now: now())
    }

    // MARK: Credentials

    enum Outcome {
        /// No credentials: the anonymous grants apply.
        case anonymous
        case identified(AccessIdentity)
        /// Credentials given, and wrong.
        case refused
        /// Wrong, and already counted (a password check reserves its failure first).
        case refusedCounted
        /// A password check found its user at the limit (checks run in parallel).
        case limited
    }

    /// Who the credentials say it is.
    /// `limitedAs`: whose failures a password check reserves (nil: none counted).
    func identify(_ credentials: Credentials, stream: String?, limitedAs key: FailureLimiter.Key? = nil) async -> Outcome {
        guard let auth else { return .anonymous }
        switch credentials {
        case .none: return .anonymous
        case .publishKey: return .anonymous
        case .token(let token): return await bearer(token)
        case .signedURL(let signed, let expires, let signature):
            // A signed URL of a stream opens its renditions too.
            let outcome = Self.checkSignedURL(stream: signed, expires: expires, signature: signature, secret: auth.signedURLSecret, now: Date())
            if case .refused = outcome, let parent = streams.parent(signed) {
                if case .identified = Self.checkSignedURL(stream: parent, expires: expires, signature: signature, secret: auth.signedURLSecret, now: Date()) {
                    return .identified(AccessIdentity(name: "signed URL", permissions: [AccessPermission(action: .read, streams: signed)]))
                }
            }
            return outcome
        case .userPassword(let user, let password): return await basic(user: user, password: password, key: "u:" + user + "\u{0}" + password, auth, limitedAs: key)
        case .header(let header):
            if header.hasPrefix("Bearer ") { return await bearer(String(header.dropFirst(7))) }
            guard let (user, password) = AccessCredentials.basic(header) else { return .refused }
            return await basic(user: user, password: password, key: header, auth, limitedAs: key)
        }
    }

    private func basic(user name: String, password: String, key: String, _ auth: AuthSettings, limitedAs limiterKey: FailureLimiter.Key?) async -> Outcome {
        guard let user = auth.user(named: name) else { return .refused }
        let cacheKey = Self.cacheKey(key)
        let t = now()
        if let until = verified.withLock({ $0[cacheKey] }), until > t {
            return .identified(AccessIdentity(name: user.name, permissions: user.permissions))
        }
        switch await verify(key: cacheKey, password: password, hash: user.passwordHash, limitedAs: limiterKey) {
        case nil: return .limited
        case false?: return limiterKey == nil ? .refused : .refusedCounted
        case true?: break
        }
        verified.withLock { v in
            if v.count > 1024 { v = v.filter { $0.value > t } }
            if v.count <= 1024 { v[cacheKey] = t + Self.verifiedForNanos }
        }
        return .identified(AccessIdentity(name: user.name, permissions: user.permissions))
    }

    /// What the cache of good credentials keeps: a digest, not the password.
    static func cacheKey(_ credentials: String) -> String {
        Hex.encode(SHA256.hash(data: Array(credentials.utf8)))
    }

    /// bcrypt takes ~0.25 s by design: it runs on a thread of Dispatch's, never on the
    /// cooperative pool (two threads here, which every request shares), and concurrent checks of
    /// the same credentials (a page's first requests) share one run.
    ///
    /// The failure is reserved when a check starts, before bcrypt's quarter second, and
    /// refunded if the password is right: guesses sent side by side meet the limit like
    /// guesses in a row. Requests that share a check (the same credentials) reserve nothing
    /// more. Nil: the user is at the limit for this client.
    private func verify(key: String, password: String, hash: String, limitedAs limiterKey: FailureLimiter.Key?) async -> Bool? {
        let (task, started): (Task<Bool, Never>?, Bool) = inFlight.withLock { f in
            if let t = f[key] { return (t, false) }
            if let limiterKey, !limiter.reserve(limiterKey, now: now()) { return (nil, false) }
            let t = Task<Bool, Never> {
                await withCheckedContinuation { c in
                    DispatchQueue.global().async { c.resume(returning: Bcrypt.verify(password, hash: hash)) }
                }
            }
            f[key] = t
            return (t, true)
        }
        guard let task else { return nil }
        let ok = await task.value
        if started {
            inFlight.withLock { $0[key] = nil }
            if ok, let limiterKey { limiter.refund(limiterKey, now: now()) }
        }
        return ok
    }

    private func bearer(_ token: String) async -> Outcome {
        guard let jwt, let identity = await jwt.identity(token) else { return .refused }
        return .identified(identity)
    }

    /// The grants without credentials.
    var anonymousIdentity: AccessIdentity {
        AccessIdentity(name: "anonymous", permissions: auth?.anonymous ?? [])
    }

    /// Whoever holds a stream's publish key may publish it, and nothing else.
    static func keyHolder(_ stream: String) -> AccessIdentity {
        AccessIdentity(name: "publish key", permissions: [AccessPermission(action: .publish, streams: stream)])
    }

    /// Every byte compared whatever the first difference.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = x.count ^ y.count
        for i in 0..<max(x.count, y.count) { diff |= Int((i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)) }
        return diff == 0
    }
}

extension Authorizer {
    /// The signature of a stream's media URLs until `expires` (Unix seconds): hex HMAC-SHA256 of
    /// `/streams/NAME/`, a newline and the expiry, under `secret`. A web application computes the
    /// same (`liverelay sign`, or openssl) and hands viewers `…?expires=E&signature=S`.
    public static func signature(stream: String, expires: Int, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("/streams/\(stream)/\n\(expires)".utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return Hex.encode(mac)
    }

    /// A signed URL grants reading its stream until it expires; a wrong or expired one is refused.
    static func checkSignedURL(stream: String, expires: String, signature: String, secret: String?, now: Date) -> Outcome {
        guard let secret, let until = PeerNumber.integer(expires, in: 0...Int(UInt32.max)) else { return .refused }
        guard Double(until) >= now.timeIntervalSince1970 else { return .refused }
        guard constantTimeEqual(Self.signature(stream: stream, expires: until, secret: secret), signature.lowercased()) else { return .refused }
        return .identified(AccessIdentity(name: "signed URL", permissions: [AccessPermission(action: .read, streams: stream)]))
    }
}
