import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// HTTPS with ALPN: h2 for pages, media and the API, and http/1.1 with WebSocket upgrade for
/// the ops wall's socket (browsers open WebSockets on HTTP/1.1 connections of their own).
/// Hummingbird's own TLS+HTTP/2 channel serves plain HTTP/1.1 on the second path.
struct SecureHTTPChannel: ServerChildChannel {
    enum Negotiated: Sendable {
        case http1(HTTP1WebSocketUpgradeChannel.Value)
        case http2(HTTP2Channel.Value)
    }
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let sslContext: NIOSSLContext
    let http1: HTTP1WebSocketUpgradeChannel
    let http2: HTTP2Channel

    /// The TLS handshake and first request head must come within this.
    let headDeadline: TimeAmount

    init(tls: TLSConfiguration, http1: HTTP1WebSocketUpgradeChannel, http2: HTTP2Channel, headDeadline: TimeAmount) throws {
        self.headDeadline = headDeadline
        var tls = tls
        tls.applicationProtocols = ["h2", "http/1.1"]
        sslContext = try NIOSSLContext(configuration: tls)
        self.http1 = http1
        self.http2 = http2
    }

    /// The global connection cap.
    var count: ConnectionCount? = nil

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        if let count, !count.admit(channel) {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: headDeadline))
            let alpn = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2"):
                    return http2.setup(channel: channel, logger: logger).map { .http2($0) }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1($0) }
                case .negotiated:
                    return channel.close().flatMap { channel.eventLoop.makeFailedFuture(ChannelError.inappropriateOperationForState) }
                }
            }
            try channel.pipeline.syncOperations.addHandler(alpn)
            return Value(negotiated: alpn.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let negotiated = try? await value.negotiated.get() else { return }
        switch negotiated {
        case .http1(let v): await http1.handle(value: v, logger: logger)
        case .http2(let v): await http2.handle(value: v, logger: logger)
        }
    }
}
