import NIOCore
import Synchronization

/// Hands datagrams to the server, which exists only once the channel is bound.
final class HandlerBox: Sendable {
    let server = Mutex<WebRTCServer?>(nil)
}

final class DatagramHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let box: HandlerBox
    init(box: HandlerBox) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        guard let server = box.server.withLock({ $0 }) else { return }
        let bytes = Array(envelope.data.readableBytesView)
        server.receive(bytes, from: .udp(envelope.remoteAddress))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP port unreachable from a viewer that left: not the server's problem.
    }
}
