public import Access
public import Relay
public import Logging
import Mux
import MediaCore
import NIOCore
import Wire
import Foundation
import Synchronization

/// Every stream re-served at `rtsp://host:port/{stream}` (`server.rtsp.listen`): LiveRelay's own
/// RTSP session layer (OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER) over
/// FFmpeg's RTP packetizers and SDP writer. RTP goes interleaved on the control connection
/// (TCP) or over UDP unicast to the client's ports; each client is an output of its stream with
/// its own queue (`RTPFeed`), so a slow client skips to a keyframe and slows nobody.
public final class RTSPServer: Sendable {
    let engine: RelayEngine
    public let host: String
    let port: Int
    /// Reading needs the `read` permission on the stream.
    let authorizer: Authorizer
    let logger: Logger
    let maxConnections: Int
    /// A client whose connection takes no bytes for this long is closed.
    let stallTimeout: TimeAmount
    /// RFC 2326's session timeout, announced in `Session`: a connection with no request this
    /// long is closed unless it plays (over UDP, unless RTCP reports came meanwhile).
    let sessionTimeout: Int
    private let listener = TCPListener()
    let connections = Atomic<Int>(0)
    private let sessionCount = Atomic<Int>(0)

    public init(engine: RelayEngine, host: String, port: Int, maxConnections: Int = 4096, stallTimeout: Double = 10, sessionTimeout: Int = 60,
                logger: Logger, authorizer: Authorizer) {
        self.sessionTimeout = sessionTimeout
        self.engine = engine
        self.host = host
        self.port = port
        self.maxConnections = maxConnections
        self.stallTimeout = .milliseconds(Int64(stallTimeout * 1000))
        self.logger = logger
        self.authorizer = authorizer
    }

    /// Sessions that played so far.
    public var sessionsStarted: Int { sessionCount.load(ordering: .relaxed) }

    /// Binds and starts accepting; returns the bound port.
    public func start() async throws -> Int {
        try await listener.start(host: host, port: port) { channel in
            try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(Int64(self.sessionTimeout))))
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RTSPRequestDecoder()))
            try channel.pipeline.syncOperations.addHandler(RTSPConnectionHandler(server: self))
        }
    }

    public func stop() async { await listener.stop() }

    func sessionStarted() { sessionCount.add(1, ordering: .relaxed) }
}

/// One control connection on its event loop: hands requests, in order, to the connection's task.
final class RTSPConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    // Safety: used only on its channel's event loop; the client's state lives in `RTSPServerSession`.
    typealias InboundIn = RTSPFrame
    let server: RTSPServer
    private var requests: AsyncStream<RTSPRequest>.Continuation?
    private var client: RTSPServerSession?
    private var counted = false

    init(server: RTSPServer) { self.server = server }

    func channelActive(context: ChannelHandlerContext) {
        if server.connections.add(1, ordering: .relaxed).newValue > server.maxConnections {
            server.connections.subtract(1, ordering: .relaxed)
            context.close(promise: nil)
            return
        }
        counted = true
        let (stream, continuation) = AsyncStream.makeStream(of: RTSPRequest.self, bufferingPolicy: .bufferingNewest(8))
        requests = continuation
        let client = RTSPServerSession(server: server, channel: context.channel,
                                address: context.remoteAddress?.ipAddress ?? "unknown",
                                localHost: context.localAddress?.ipAddress ?? server.host)
        self.client = client
        Task { await client.serve(stream) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        client?.heard()
        if case .request(let r) = unwrapInboundIn(data) { requests?.yield(r) }
        // Interleaved RTCP receiver reports need no answer.
    }

    func channelInactive(context: ChannelHandlerContext) {
        requests?.finish()
        requests = nil
        if counted { server.connections.subtract(1, ordering: .relaxed); counted = false }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Quiet for a minute without playing: a connection held for nothing.
        // A session timeout without a request: a connection held for nothing, unless it plays — over TCP
        // its writes tell whether the client is there; over UDP its RTCP reports must.
        if event is IdleStateHandler.IdleStateEvent, let client, !client.isPlaying || client.silentOverUDP(seconds: Double(server.sessionTimeout)) {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is RTSPMessageError {
            let bytes = RTSPResponse(400, "Bad Request").encoded(cseq: "0")
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        }
        context.close(promise: nil)
    }

    typealias OutboundOut = ByteBuffer
}
