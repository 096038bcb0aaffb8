/// A STUN or TURN server offered to WebRTC clients (`server.webrtc.ice_servers`): fixed
/// credentials, or coturn's REST scheme (`use-auth-secret`): each client gets a username of
/// `EXPIRY:NAME` and the base64 HMAC-SHA1 of it under the shared `secret`, valid for `ttl`.
public struct ICEServer: Sendable, Equatable {
    public var urls: [String]
    public var username: String?
    public var credential: String?
    public var secret: String?
    /// Seconds a minted credential lasts.
    public var ttl: Int = 3600

    public init(urls: [String], username: String? = nil, credential: String? = nil, secret: String? = nil, ttl: Int = 3600) {
        self.urls = urls
        self.username = username
        self.credential = credential
        self.secret = secret
        self.ttl = ttl
    }
}
