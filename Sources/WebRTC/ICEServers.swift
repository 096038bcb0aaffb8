import Wire
import Crypto
public import Foundation
public import Relay

/// What a client is told about one STUN or TURN server: its URLs and, for TURN, credentials
/// (minted for that client when the server is configured with coturn's shared secret).
public struct OfferedICEServer: Sendable, Equatable, Codable {
    // Encoded as the browser's RTCIceServer takes it: urls, username, credential.
    public let urls: [String]
    public let username: String?
    public let credential: String?

    /// coturn's REST scheme (draft-uberti-behave-turn-rest): username `EXPIRY:NAME` (Unix
    /// seconds), password the base64 of HMAC-SHA1(secret, username).
    static func minted(_ server: ICEServer, user: String, now: Date) -> OfferedICEServer {
        guard let secret = server.secret else {
            return OfferedICEServer(urls: server.urls, username: server.username, credential: server.credential)
        }
        let expiry = Int(now.timeIntervalSince1970) + server.ttl
        // The name is the reader's, kept to characters every TURN server takes in a username.
        let name = String(user.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.@".unicodeScalars.contains($0)) }.prefix(64))
        let username = "\(expiry):\(name.isEmpty ? "anonymous" : name)"
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Array(username.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return OfferedICEServer(urls: server.urls, username: username, credential: Base64.encode(mac))
    }

    /// WHEP's and WHIP's way of telling (RFC 9725 §4.6): one `Link` header value per URL.
    public var linkValues: [String] {
        urls.map { url in
            var v = "<\(url)>; rel=\"ice-server\""
            if let username, let credential {
                v += "; username=\"\(Self.quoted(username))\"; credential=\"\(Self.quoted(credential))\"; credential-type=\"password\""
            }
            return v
        }
    }

    static func quoted(_ s: String) -> String {
        String(s.unicodeScalars.filter { $0 != "\"" && $0 != "\\" && $0.value >= 0x20 && $0.value < 0x7F }.map(Character.init))
    }
}

extension WebRTCServer {
    /// The STUN and TURN servers for one client (`server.webrtc.ice_servers`), TURN credentials
    /// minted for `user` where a shared secret is configured.
    public func iceServers(for user: String, now: Date = Date()) -> [OfferedICEServer] {
        settings.iceServers.map { OfferedICEServer.minted($0, user: user, now: now) }
    }
}
