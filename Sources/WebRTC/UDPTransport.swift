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

extension WebRTCServer {
    /// A packet to a peer: a datagram from the shared port, or a frame on its TCP connection.
    func send(_ to: PeerAddress, _ bytes: [UInt8]) {
        switch to {
        case .udp(let a):
            var buf = channel.allocator.buffer(capacity: bytes.count)
            buf.writeBytes(bytes)
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: a, data: buf), promise: nil)
        case .tcp(let a):
            tcp.send(bytes, to: a)
        }
    }

    /// Packets to one peer at once: over UDP, one hop onto the channel's event loop and one
    /// flush (NIO sends the datagrams with one `sendmmsg`); over TCP, one flush of the frames.
    func sendAll(_ to: PeerAddress, _ all: [ByteBuffer]) {
        switch to {
        case .udp(let a):
            let channel = channel
            channel.eventLoop.execute {
                for b in all { channel.write(AddressedEnvelope(remoteAddress: a, data: b), promise: nil) }
                channel.flush()
            }
        case .tcp(let a):
            tcp.send(all, to: a)
        }
    }
}
