public import NIOCore
import NIOPosix
import Synchronization

/// The listening socket of LiveRelay's own TCP servers (the RTMP ingest, the RTSP server) on
/// the shared event loops: a backlog of 256, addresses reused, Nagle off on every connection.
public final class TCPListener: Sendable {
    private let channel = Mutex<(any Channel)?>(nil)
    public init() {}

    /// Binds and starts accepting, each connection's pipeline set up by `initialize` on its
    /// event loop; returns the bound port (the system's choice for port 0).
    public func start(host: String, port: Int, initialize: @escaping @Sendable (any Channel) throws -> Void) async throws -> Int {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try initialize(channel) }
            }
        let ch = try await bootstrap.bind(host: host, port: port).get()
        channel.withLock { $0 = ch }
        return ch.localAddress?.port ?? port
    }

    /// Stops accepting; open connections stay until their own ends.
    public func stop() async {
        if let ch = channel.withLock({ $0 }) { try? await ch.close() }
    }
}
