/// `GET /streams/{name}/whep/ice-servers` (and `whip/`): the STUN and TURN servers to use, as
/// the browser's `RTCIceServer` takes them, TURN credentials minted for the asker.
public struct ICEServerList: Sendable, Codable, Equatable {
    public struct Server: Sendable, Codable, Equatable {
        public var urls: [String]
        public var username: String?
        public var credential: String?

        public init(urls: [String], username: String? = nil, credential: String? = nil) {
            self.urls = urls
            self.username = username
            self.credential = credential
        }
    }

    public var iceServers: [Server]

    public init(iceServers: [Server]) {
        self.iceServers = iceServers
    }
}
