public import NIOCore
import NIOPosix
import Synchronization

/// Where a peer's ICE packets come from and go to: a UDP address on the shared port, or a TCP
/// connection on the ICE-TCP port (RFC 6544), known by its remote address.
public enum PeerAddress: Hashable, Sendable, CustomStringConvertible {
    case udp(SocketAddress)
    case tcp(SocketAddress)

    public var socketAddress: SocketAddress {
        switch self {
        case .udp(let a), .tcp(let a): a
        }
    }

    public var transport: String {
        switch self {
        case .udp: "udp"
        case .tcp: "tcp"
        }
    }

    public var description: String { "\(transport) \(socketAddress)" }
}

/// RFC 4571 framing, which ICE-TCP uses: each STUN message, DTLS record, RTP or RTCP packet
/// after a 16-bit big-endian length. A frame's length is at most 65,535 by construction.
struct RFC4571Decoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        let frame = buffer.readBytes(length: Int(length)) ?? []
        if !frame.isEmpty { context.fireChannelRead(Self.wrapInboundOut(frame)) }
        return .continue
    }
}

/// The passive side of ICE-TCP: connections from peers whose UDP is blocked. Each connection's
/// frames go to the server as if they were datagrams from `.tcp(remote)`; a connection that
/// stays silent for 30 s, or one more than a client address may hold, is closed.
final class ICETCPConnections: Sendable {
    struct Table {
        var channels: [SocketAddress: any Channel] = [:]
        var perClient: [String: Int] = [:]
    }

    private let table = Mutex(Table())
    let limitPerClient: Int
    /// Frames dropped because a TCP peer did not read them (its send buffer was full).
    let dropped = Atomic<Int>(0)

    init(limitPerClient: Int) {
        self.limitPerClient = limitPerClient
    }

    static func client(_ a: SocketAddress) -> String { a.ipAddress ?? "\(a)" }

    /// A new connection; false when its client holds its limit already.
    func open(_ channel: any Channel, from remote: SocketAddress) -> Bool {
        table.withLock { t in
            let c = Self.client(remote), n = t.perClient[c] ?? 0
            guard n < limitPerClient else { return false }
            t.perClient[c] = n + 1
            t.channels[remote] = channel
            return true
        }
    }

    func closed(_ remote: SocketAddress) {
        table.withLock { t in
            guard t.channels.removeValue(forKey: remote) != nil else { return }
            let c = Self.client(remote), n = (t.perClient[c] ?? 1) - 1
            t.perClient[c] = n > 0 ? n : nil
        }
    }

    /// One frame to the peer at `remote`; dropped (and counted) when its connection is gone or
    /// its send buffer is full: a slow TCP viewer loses packets, as over UDP, and NACKs them.
    func send(_ bytes: [UInt8], to remote: SocketAddress) { send([ByteBuffer(bytes: bytes)], to: remote) }

    /// Frames on `remote`'s connection, flushed once; dropped (counted) while it is not writable.
    func send(_ all: [ByteBuffer], to remote: SocketAddress) {
        guard let channel = table.withLock({ $0.channels[remote] }) else { return }
        guard channel.isWritable else {
            dropped.add(all.count, ordering: .relaxed)
            return
        }
        var buf = channel.allocator.buffer(capacity: all.reduce(0) { $0 + $1.readableBytes + 2 })
        for packet in all where packet.readableBytes <= Int(UInt16.max) {
            buf.writeInteger(UInt16(packet.readableBytes))
            buf.writeImmutableBuffer(packet)
        }
        channel.writeAndFlush(buf, promise: nil)
    }

    func closeAll() {
        let all = table.withLock { t in
            defer { t = Table() }
            return Array(t.channels.values)
        }
        for c in all { c.close(promise: nil) }
    }

    /// Binds the passive ICE-TCP port: `port` when it is free (the UDP port's number, so one
    /// number serves both), else one the system picks; `exact`: that port or an error.
    static func listen(host: String, port: Int, exact: Bool, connections: ICETCPConnections, box: HandlerBox) async throws -> any Channel {
        func bootstrap() -> ServerBootstrap {
            ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 128 << 10, high: 512 << 10))
                .childChannelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(30)))
                        try ch.pipeline.syncOperations.addHandler(ByteToMessageHandler(RFC4571Decoder()))
                        try ch.pipeline.syncOperations.addHandler(ICETCPHandler(box: box, connections: connections))
                    }
                }
        }
        if exact { return try await bootstrap().bind(host: host, port: port).get() }
        if port > 0, let ch = try? await bootstrap().bind(host: host, port: port).get() { return ch }
        return try await bootstrap().bind(host: host, port: 0).get()
    }
}

final class ICETCPHandler: ChannelInboundHandler {
    typealias InboundIn = [UInt8]
    let box: HandlerBox
    let connections: ICETCPConnections
    /// The peer, kept from activation (the channel's own may be gone once it closes).
    private var remote: SocketAddress?

    init(box: HandlerBox, connections: ICETCPConnections) {
        self.box = box
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let r = context.remoteAddress, connections.open(context.channel, from: r) else {
            context.close(promise: nil)
            return
        }
        remote = r
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let remote, let server = box.server.withLock({ $0 }) else { return }
        server.receive(Self.unwrapInboundIn(data), from: .tcp(remote))
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let remote { connections.closed(remote) }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
