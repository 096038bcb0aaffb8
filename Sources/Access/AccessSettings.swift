import Wire

/// What a user may do.
public enum AccessAction: String, Sendable, Hashable, CaseIterable, Codable {
    /// Previews, snapshots, HLS, meta.json, the stream GETs of the API, the pages.
    case read
    /// Push ingest.
    case publish
    /// PATCH, and run-time stream control.
    case admin
    /// `/metrics`.
    case metrics
    /// The archive: finding and playing back recordings, viewing incidents and bookmarks
    /// (watching live is `read`).
    case playback
    /// Taking recordings away: a clip and its manifest, an incident's evidence bundle.
    case export
    /// Bookmarking, and making and changing incidents.
    case incident
    /// Steering a camera: PTZ moves, stops and presets.
    case ptz
    /// Talking to a camera's speaker or a field unit (push-to-talk). `admin` on the stream
    /// takes the floor from a talker who has only `talk`.
    case talk
}

/// One grant: an action, on the streams whose names match a glob (`*`, `?`); nil: every stream.
public struct AccessPermission: Sendable, Hashable {
    public var action: AccessAction
    public var streams: String?

    public init(action: AccessAction, streams: String? = nil) {
        self.action = action
        self.streams = streams
    }

    /// Whether this grants `action` on `stream` (nil: "any stream at all", e.g. the stream list).
    public func grants(_ action: AccessAction, stream: String?) -> Bool {
        guard action == self.action else { return false }
        guard let pattern = streams, let stream else { return true }
        return Glob.matches(pattern, stream)
    }
}

/// A user of the HTTP server and of push ingest.
public struct AccessUser: Sendable, Hashable {
    public var name: String
    /// A bcrypt hash (`liverelay password` makes one); a plain password is refused.
    public var passwordHash: String
    public var permissions: [AccessPermission]

    public init(name: String, passwordHash: String, permissions: [AccessPermission]) {
        self.name = name
        self.passwordHash = passwordHash
        self.permissions = permissions
    }
}

/// Bearer tokens: JWTs signed by a key of a JWKS, carrying permissions in a claim.
public struct JWTSettings: Sendable, Hashable {
    /// Where the JWKS (JSON Web Key Set) is: a file, or an `https://` URL (`http://` on
    /// loopback only), fetched again every `refresh` seconds.
    public var jwks: String
    /// Seconds between fetches of a JWKS URL (keys rotate at the identity provider).
    public var refresh: Double = 300
    public var isURL: Bool { jwks.hasPrefixIgnoringCase("https://") || jwks.hasPrefixIgnoringCase("http://") }
    /// The claim holding `[{action, streams}]`.
    public var claim = "liverelay_permissions"
    public var issuer: String?
    public var audience: String?

    public init(jwks: String) { self.jwks = jwks }
}

/// The `auth` section: who may watch, publish and steer.
public struct AuthSettings: Sendable, Hashable {
    public var users: [AccessUser] = []
    /// What anyone may do without credentials.
    public var anonymous: [AccessPermission] = []
    public var jwt: JWTSettings?
    /// `auth.signed_urls.secret`: media URLs of a stream carrying `?expires=UNIX&signature=HEX`
    /// (HMAC-SHA256 of `/streams/NAME/` and the expiry under this secret) may be read until they
    /// expire, without credentials of their own: a cache in front passes them through, and every
    /// viewer given the same URL shares its cached objects.
    public var signedURLSecret: String?

    public init() {}

    public func user(named name: String) -> AccessUser? { users.first { $0.name == name } }
}

/// The identity a request carries, once its credentials are checked.
public struct AccessIdentity: Sendable, Hashable {
    public var name: String
    public var permissions: [AccessPermission]

    public init(name: String, permissions: [AccessPermission]) {
        self.name = name
        self.permissions = permissions
    }

    public func may(_ action: AccessAction, stream: String?) -> Bool {
        permissions.contains { $0.grants(action, stream: stream) }
    }
}

/// Shell-style globs over stream names: `*` any run, `?` one character.
public enum Glob {
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern), t = Array(text)
        var pi = 0, ti = 0
        var star: Int?, mark = 0
        while ti < t.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == t[ti]) {
                pi += 1; ti += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi; mark = ti; pi += 1
            } else if let s = star {
                pi = s + 1; mark += 1; ti = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
