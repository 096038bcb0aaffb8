import RTSPServer
import Relay

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
