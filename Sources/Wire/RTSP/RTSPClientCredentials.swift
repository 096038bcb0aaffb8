import Crypto

/// What LiveRelay's RTSP client answers a camera's 401 with: Digest (RFC 2617, MD5, `qop=auth`
/// when offered) when the camera offers it, else Basic.
public struct RTSPClientCredentials: Sendable {
    public let user: String
    public let password: String
    /// The challenge being answered; nil until one came.
    public private(set) var challenge: RTSPAuthChallenge?
    /// Requests answered under the current Digest nonce (`nc`).
    private var nonceCount: UInt32 = 0

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// True once a challenge was taken.
    public var isReady: Bool { challenge != nil }

    /// Takes the challenges of a 401 (its `WWW-Authenticate` values). False, and nothing
    /// changed, if none can be answered.
    public mutating func take(challenges values: [String]) -> Bool {
        guard let c = RTSPAuthChallenge(choosingFrom: values) else { return false }
        challenge = c
        nonceCount = 0
        return true
    }

    /// The `Authorization` value for a request, once a challenge came. `cnonce` is the client
    /// nonce of a `qop=auth` answer: random when nil (a test gives RFC 2617's).
    public mutating func header(method: String, uri: String, cnonce: String? = nil) -> String? {
        switch challenge {
        case nil:
            return nil
        case .basic:
            return "Basic " + Base64.encode("\(user):\(password)".utf8)
        case .digest(let d):
            var v = "Digest username=\"\(user)\", realm=\"\(d.realm)\", nonce=\"\(d.nonce)\", uri=\"\(uri)\""
            if d.qopAuth {
                nonceCount &+= 1
                let nc = Hex.encode(withUnsafeBytes(of: nonceCount.bigEndian, Array.init))
                let cn = cnonce ?? Hex.encode(withUnsafeBytes(of: UInt64.random(in: 0...UInt64.max).bigEndian, Array.init))
                let response = Self.digestResponse(user: user, password: password, realm: d.realm, nonce: d.nonce,
                                                   method: method, uri: uri, qop: (nc: nc, cnonce: cn))
                v += ", qop=auth, nc=\(nc), cnonce=\"\(cn)\", response=\"\(response)\""
            } else {
                let response = Self.digestResponse(user: user, password: password, realm: d.realm, nonce: d.nonce, method: method, uri: uri)
                v += ", response=\"\(response)\""
            }
            if let opaque = d.opaque { v += ", opaque=\"\(opaque)\"" }
            return v + ", algorithm=MD5"
        }
    }

    /// RFC 2617 §3.2.2.1's request-digest, lowercase hex: MD5(HA1:nonce:HA2), or with
    /// `qop=auth` MD5(HA1:nonce:nc:cnonce:auth:HA2), where HA1 = MD5(user:realm:password) and
    /// HA2 = MD5(method:uri).
    public static func digestResponse(user: String, password: String, realm: String, nonce: String, method: String, uri: String,
                                      qop: (nc: String, cnonce: String)? = nil) -> String {
        let ha1 = md5("\(user):\(realm):\(password)"), ha2 = md5("\(method):\(uri)")
        guard let qop else { return md5("\(ha1):\(nonce):\(ha2)") }
        return md5("\(ha1):\(nonce):\(qop.nc):\(qop.cnonce):auth:\(ha2)")
    }

    /// MD5 of the text's UTF-8, lowercase hex.
    static func md5(_ text: String) -> String {
        Hex.encode(Insecure.MD5.hash(data: Array(text.utf8)))
    }
}
