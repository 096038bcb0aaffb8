import Crypto
import Wire

/// The door a request came through. Servers say which; the decision is the same for all of
/// them, but publish keys and passphrases belong to the doors that take them.
public enum AccessProtocol: String, Sendable, Hashable, CaseIterable {
    case http, websocket, rtsp, rtmp, srt, webrtc
}

/// What a client presented.
public enum AccessCredentials: Sendable, Hashable {
    case none
    /// An HTTP or RTSP `Authorization` header (`Basic …`, `Bearer …`).
    case header(String)
    /// A user and password given another way (RTMP's `?user=&pass=`, SRT's stream ID).
    case userPassword(user: String, password: String)
    /// A bearer token given without a header (`?token=` on media URLs).
    case token(String)
    /// A signed media URL of `stream` (`?expires=UNIX&signature=HEX`, `auth.signed_urls`).
    case signedURL(stream: String, expires: String, signature: String)
    /// A stream's publish key (RTMP's `?key=`, OBS's stream key).
    case publishKey(String)

    /// Whose failures a wrong one counts toward: a user name, the secret behind a publish key
    /// (`keys`: every key that opens the stream at its door; the global key is one secret for
    /// every stream, guessed through any of them), one token or signed URL (a player polling
    /// with an expired one limits only that one). One user's mistakes never limit another
    /// user, or anyone anonymous, at the same address. Nil: nothing to guess.
    func principal(keys: [String]) -> String? {
        switch self {
        case .none: return nil
        case .userPassword(let user, _): return "user:" + user
        case .token(let token): return "token:" + Self.digest(token)
        case .signedURL(let stream, let expires, let signature): return "signed:" + Self.digest(stream + "\n" + expires + "\n" + signature)
        case .publishKey: return keys.isEmpty ? nil : Self.keyPrincipal(keys)
        case .header(let h):
            if h.hasPrefix("Bearer ") { return "token:" + Self.digest(String(h.dropFirst(7))) }
            guard let (user, _) = Self.basic(h) else { return "malformed" }
            return "user:" + user
        }
    }

    /// The principal of guesses at the secret `keys` stand for.
    static func keyPrincipal(_ keys: [String]) -> String {
        "key:" + digest(keys.sorted().joined(separator: "\n"))
    }

    /// A short SHA-256 of a secret: it names the secret in the limiter without keeping it.
    static func digest(_ text: String) -> String {
        Hex.encode(SHA256.hash(data: Array(text.utf8)).prefix(12))
    }

    /// `Basic BASE64(user:password)` → user and password.
    static func basic(_ header: String) -> (user: String, password: String)? {
        guard header.hasPrefix("Basic "), let bytes = Base64.decode(header.dropFirst(6)),
              let text = String(validating: bytes, as: UTF8.self), let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}

/// One question for the authorizer: may the client behind `peer`, presenting `credentials`,
/// do `action` on `stream` through `door`? Every server fills one in; none decides itself.
public struct AccessRequest: Sendable, Hashable {
    public var credentials: AccessCredentials
    public var action: AccessAction
    /// nil: not about one stream (the stream list, `/metrics`).
    public var stream: String?
    public var door: AccessProtocol
    /// The address the connection came from.
    public var peer: String
    /// `X-Forwarded-For`, when the request carried one: believed only from a trusted proxy.
    public var forwardedFor: String?

    public init(_ credentials: AccessCredentials, _ action: AccessAction, stream: String?, door: AccessProtocol,
                peer: String, forwardedFor: String? = nil) {
        self.credentials = credentials
        self.action = action
        self.stream = stream
        self.door = door
        self.peer = peer
        self.forwardedFor = forwardedFor
    }
}

/// The answer.
public enum AccessDecision: Sendable, Equatable {
    /// Allowed; the identity is nil when no `auth` section exists and no key is needed.
    case allowed(AccessIdentity?)
    /// No credentials where some are needed, or wrong ones (the reason says which).
    case unauthorized(String)
    /// Right credentials that do not grant it.
    case forbidden(AccessIdentity)
    /// Too many failed attempts of these credentials' user (or key) from this client lately.
    case limited
}

/// What the authorizer needs to know of streams, asked when it decides (streams change at run
/// time): which stream a rendition is made from, and the publish keys of a stream at a door.
public struct AccessStreams: Sendable {
    /// The stream a rendition's pictures come from; nil for a stream of its own.
    public var parent: @Sendable (String) -> String?
    /// The keys that open `stream` to publishers at `door` (RTMP: the global key and the
    /// stream's; SRT: the stream's passphrase, else the global one); empty: none needed.
    public var publishKeys: @Sendable (_ stream: String, _ door: AccessProtocol) -> [String]
    /// The passphrase an SRT reader of `stream` must give in its handshake (`srt_read_passphrase`);
    /// nil: none, and a user in the stream ID (or anonymous reading) decides.
    public var readPassphrase: @Sendable (_ stream: String) -> String?

    public init(parent: @escaping @Sendable (String) -> String? = { _ in nil },
                publishKeys: @escaping @Sendable (String, AccessProtocol) -> [String] = { _, _ in [] },
                readPassphrase: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.parent = parent
        self.publishKeys = publishKeys
        self.readPassphrase = readPassphrase
    }
}
