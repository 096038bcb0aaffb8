import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Closes a connection that has not sent a whole request head within `timeout`: idle
/// connections and slowloris clients. Hummingbird's WebSocket-upgradable HTTP/1.1 channel
/// starts its own idle timer only once a head has been parsed, so this guards the time before.
/// It watches raw bytes for the blank line that ends a head (the HTTP/2 preface has one too)
/// and then leaves the pipeline.
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var tail: [UInt8] = []
    private var done = false

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard timer == nil, !done else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !done {
            let buffer = unwrapInboundIn(data)
            var last = tail
            buffer.withUnsafeReadableBytes { bytes in
                for b in bytes {
                    last.append(b)
                    if last.count > 4 { last.removeFirst() }
                    if last == [13, 10, 13, 10] { done = true; break }
                }
            }
            tail = last
        }
        context.fireChannelRead(data)
        if done {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }
}

/// Connections open now, all clients together: beyond `limit`, a new one is closed at once.
final class ConnectionCount: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    init(limit: Int) { self.limit = limit }
    var current: Int { open.load(ordering: .relaxed) }
    var refusedSoFar: Int { refused.load(ordering: .relaxed) }

    /// Counts the channel while it is open; false (and nothing counted) when full.
    func admit(_ channel: any Channel) -> Bool {
        if open.add(1, ordering: .relaxed).newValue > limit {
            open.subtract(1, ordering: .relaxed)
            refused.add(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { _ in self.open.subtract(1, ordering: .relaxed) }
        return true
    }
}

/// An HTTP child channel with the global connection cap and `RequestHeadDeadline` in front.
struct HeadDeadlineChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let timeout: TimeAmount
    let count: ConnectionCount?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        if let count, !count.admit(channel) {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        do {
            try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: timeout))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
