public import Hummingbird
public import NIOCore
public import Access
public import HummingbirdWebSocket

/// The request context of LiveRelay's routes: who is asking (once `AccessMiddleware` checked)
/// and from where.
public struct RelayRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection (the ops wall tunes its socket when it upgrades).
    public let channel: any Channel
    /// The identity the request carries; nil when the server has no `auth` section (loopback
    /// only, everything open).
    public var identity: AccessIdentity?
    /// The authorizer that let the request in: it answers what else the identity may see.
    public var authorizer: Authorizer?
    /// Set by the ops wall's route when a request upgrades to its WebSocket.
    public let webSocket = WebSocketHandlerReference<RelayRequestContext>()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// Whether this request may read `stream` (lists and pages show only those).
    public func mayRead(_ stream: String) -> Bool {
        may(.read, stream: stream)
    }

    public func may(_ action: AccessAction, stream: String?) -> Bool {
        authorizer?.permits(identity, action, stream: stream) ?? true
    }
}
