import NIOCore
import Synchronization

/// Closes a connection whose peer stopped reading: while the socket stays unwritable (its
/// send buffer full) for `timeout`, the client is stalled (a frozen laptop, a viewer that
/// never reads an MJPEG stream) and holds a descriptor and a response for nothing.
///
/// The kernel grows a socket's send buffer on its own up to several MiB, which a 200 kB/s
/// preview takes half a minute to fill: the send buffer is fixed at `sendBuffer` bytes (the
/// kernel doubles it), enough for 40 Mbit/s at 100 ms round trip.
final class WriteStallHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let timeout: TimeAmount
    static let sendBuffer = 256 * 1024
    private var pending: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        // Only a TCP connection (HTTP/1.1) has a socket to size: an HTTP/2 stream channel stops
        // the process on a socket option (its flow-control window shows a stall on its own).
        guard context.channel is any SocketOptionProvider else { return }
        _ = context.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(Self.sendBuffer))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pending?.cancel()
            pending = nil
        } else if pending == nil {
            let channel = context.channel
            pending = context.eventLoop.scheduleTask(in: timeout) {
                if !channel.isWritable { channel.close(promise: nil) }
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pending?.cancel()
        pending = nil
    }
}

@available(*, unavailable)
extension WriteStallHandler: Sendable {}

/// Per-client caps on what holds server resources for long: MJPEG viewers and blocking
/// playlist requests, counted by client address.
final class ClientLimits: Sendable {
    enum Kind: Sendable { case viewers, blockingRequests }
    let viewers: Int
    let blockingRequests: Int
    private let held = Mutex<[String: (viewers: Int, blocking: Int)]>([:])

    init(viewers: Int, blockingRequests: Int) {
        self.viewers = viewers
        self.blockingRequests = blockingRequests
    }

    /// Takes one slot for `client`; false when it already holds as many as allowed.
    func acquire(_ kind: Kind, client: String) -> Bool {
        held.withLock { h in
            var e = h[client] ?? (0, 0)
            switch kind {
            case .viewers:
                guard e.viewers < viewers else { return false }
                e.viewers += 1
            case .blockingRequests:
                guard e.blocking < blockingRequests else { return false }
                e.blocking += 1
            }
            h[client] = e
            return true
        }
    }

    func release(_ kind: Kind, client: String) {
        held.withLock { h in
            guard var e = h[client] else { return }
            switch kind {
            case .viewers: e.viewers = max(0, e.viewers - 1)
            case .blockingRequests: e.blocking = max(0, e.blocking - 1)
            }
            h[client] = (e.viewers == 0 && e.blocking == 0) ? nil : e
        }
    }

    func count(_ kind: Kind, client: String) -> Int {
        held.withLock { h in kind == .viewers ? h[client]?.viewers ?? 0 : h[client]?.blocking ?? 0 }
    }
}
