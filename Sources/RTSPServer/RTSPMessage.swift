import NIOCore
import Foundation
import Wire

/// What a client sends on the control connection: a request, or an interleaved RTCP packet
/// (`$`, channel, length) that needs no answer.
enum RTSPInbound: Sendable {
    case request(RTSPRequest)
    case interleaved(channel: UInt8)
}

/// Splits the control connection's bytes into requests and interleaved packets. Heads are
/// bounded (16 KiB), bodies too (64 KiB): a client cannot make the server hold more.
struct RTSPRequestDecoder: ByteToMessageDecoder {
    typealias InboundOut = RTSPInbound
    static let maxHead = 16 << 10
    static let maxBody = 64 << 10

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return .needMoreData }
        if first == UInt8(ascii: "$") {
            guard buffer.readableBytes >= 4,
                  let channel = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self),
                  let length = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt16.self) else { return .needMoreData }
            guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 4 + Int(length))
            context.fireChannelRead(wrapInboundOut(.interleaved(channel: channel)))
            return .continue
        }
        let view = buffer.readableBytesView
        guard let headLength = RTSPMessageHead.end(of: view) else {
            if view.count > Self.maxHead { throw RTSPMessageError("request head over \(Self.maxHead) bytes") }
            return .needMoreData
        }
        var request = try RTSPMessageHead.request(view.prefix(headLength))
        let bodyLength = try RTSPMessageHead.contentLength(request.headers, max: Self.maxBody)
        guard buffer.readableBytes >= headLength + 4 + bodyLength else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: headLength + 4)
        request.body = buffer.readBytes(length: bodyLength) ?? []
        context.fireChannelRead(wrapInboundOut(.request(request)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        .needMoreData
    }
}

/// A client's `Transport` header, the parts LiveRelay serves: unicast RTP over the control
/// connection (interleaved) or over UDP to the client's ports.
enum RTSPTransport: Equatable {
    case interleaved(rtp: UInt8, rtcp: UInt8)
    case udp(rtpPort: Int, rtcpPort: Int)

    /// The first offer of the header LiveRelay can serve; nil when none (multicast only, or
    /// nothing readable).
    static func choose(_ header: String, track: Int) -> RTSPTransport? {
        for offer in RTSPTransportSpec.parseList(header) where offer.isRTP && !offer.isMulticast {
            if offer.isInterleaved {
                if let p = offer.interleaved { return .interleaved(rtp: p.rtp, rtcp: p.rtcp) }
                guard (0...127).contains(track) else { continue }
                return .interleaved(rtp: UInt8(track * 2), rtcp: UInt8(track * 2 + 1))
            }
            guard let p = offer.clientPort else { continue }
            return .udp(rtpPort: Int(p.rtp), rtcpPort: Int(p.rtcp))
        }
        return nil
    }
}
