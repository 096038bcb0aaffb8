import Foundation
import JWTKit
import Synchronization
import Wire
public import Logging

/// How the authorizer fetches a JWKS URL (bounded in time and size by the caller's HTTP client):
/// the status and body, or a one-line problem with no secret in it.
public typealias JWKSFetch = @Sendable (_ url: String) async -> Result<(status: Int, body: [UInt8]), JWKSFetchFailure>

public struct JWKSFetchFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Verifies JWTs against a JWKS and reads their permissions claim. A JWKS file is read at
/// start; a JWKS URL is fetched at start and every `refresh` seconds (bounded: 5 s, 1 MiB). A
/// fetch that fails, or brings a set with no usable key, keeps the keys in hand.
final class JWTVerifier: Sendable {
    let settings: JWTSettings
    private let keys: Mutex<JWTKeyCollection>
    private let logger: Logger
    private let fetchJWKS: JWKSFetch?
    static let maxJWKSBytes = 1 << 20
    static let maxKeys = 64
    /// 8192 bits: 1024 bytes, 1366 characters of base64url.
    static let maxModulusBase64 = 1366

    init(settings: JWTSettings, fetch: JWKSFetch?, logger: Logger) async throws {
        self.settings = settings
        self.logger = logger
        self.fetchJWKS = fetch
        keys = Mutex(JWTKeyCollection())
        if settings.isURL {
            if let problem = await self.fetch() {
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
        let url = Self.shown(settings.jwks)
        guard let fetchJWKS else { return "\(url): no HTTP client to fetch it with" }
        switch await fetchJWKS(settings.jwks) {
        case .failure(let f):
            return "\(url): \(f.description)"
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

    /// The URL for a log line: no user information, no query (either may hold a secret).
    static func shown(_ url: String) -> String {
        var u = Substring(url)
        if let q = u.firstIndex(where: { $0 == "?" || $0 == "#" }) { u = u[..<q] }
        if let scheme = u.utf8Range(of: "://"), let at = u[scheme.upperBound...].firstIndex(of: "@"),
           !u[scheme.upperBound..<at].contains("/") {
            u = Substring(String(u[..<scheme.upperBound]) + u[u.index(after: at)...])
        }
        return String(u)
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

