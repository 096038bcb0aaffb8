import HummingbirdCore
import Logging
import NIOCore

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

/// An HTTP child channel with `RequestHeadDeadline` in front.
struct HeadDeadlineChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let timeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
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
