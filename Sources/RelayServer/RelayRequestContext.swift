public import Hummingbird
public import NIOCore
public import Relay
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
    /// Set by the ops wall's route when a request upgrades to its WebSocket.
    public let webSocket = WebSocketHandlerReference<RelayRequestContext>()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// Whether this request may read `stream` (lists and pages show only those).
    public func mayRead(_ stream: String) -> Bool {
        identity?.may(.read, stream: stream) ?? true
    }
}
