import RTSPServer
import Relay
import Foundation

extension AccessControl {
    /// The RTSP server's check: the same users, tokens, grants and failed-login limit as HTTP,
    /// for the `read` action on the stream. Without an `auth` section (a loopback server),
    /// everyone may read.
    var rtspAuthorizer: RTSPAuthorizer {
        { [self] authorization, stream, client in
            guard auth != nil else { return .allowed }
            if isLimited(client) { return .limited }
            switch await identify(authorization: authorization, token: nil) {
            case .refused:
                recordFailure(client)
                return .unauthorized
            case .anonymous:
                return anonymousIdentity.may(.read, stream: stream) ? .allowed : .unauthorized
            case .identified(let identity):
                return identity.may(.read, stream: stream) ? .allowed : .forbidden
            }
        }
    }
}

extension AccessControl {
    /// The RTMP ingest's `?user=…&pass=…`: a user of the `auth` section with the `publish`
    /// action on the stream; failed logins counted and limited per address as for HTTP.
    var publishAuthorizer: @Sendable (String, String, String, String) async -> Bool {
        { [self] user, password, stream, client in
            guard auth != nil, !isLimited(client) else { return false }
            let basic = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
            switch await identify(authorization: basic, token: nil) {
            case .identified(let identity): return identity.may(.publish, stream: stream)
            case .refused:
                recordFailure(client)
                return false
            case .anonymous: return false
            }
        }
    }
}
