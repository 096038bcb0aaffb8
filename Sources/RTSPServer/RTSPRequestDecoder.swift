import NIOCore
import Wire

/// Splits a player's control connection into frames with Wire's RTSP framer (the server's side):
/// requests, and interleaved RTCP that needs no answer. Heads are bounded (16 KiB), bodies too
/// (64 KiB): a client cannot make the server hold more. A frame that cannot be read throws
/// `RTSPMessageError` (the connection answers 400 and closes).
struct RTSPRequestDecoder: ByteToMessageDecoder {
    typealias InboundOut = RTSPFrame
    static let framer = RTSPFramer.player

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes > 0 else { return .needMoreData }
        // One copy of what is readable, split into every frame it holds.
        let bytes = Array(buffer.readableBytesView)
        var offset = 0
        while true {
            switch try Self.framer.next(in: bytes[offset...]) {
            case .frame(let frame, let consumed):
                offset += consumed
                buffer.moveReaderIndex(forwardBy: consumed)
                context.fireChannelRead(wrapInboundOut(frame))
            case .needsMore(let consumed):
                buffer.moveReaderIndex(forwardBy: consumed)
                return .needMoreData
            }
        }
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        .needMoreData
    }
}
