import NIOCore
import Foundation
import Wire

/// One RTSP request (RFC 2326): method, URI, headers, body.
struct RTSPRequest: Sendable {
    var method: String
    var uri: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringCase(name) }?.value
    }

    var cseq: String { header("CSeq") ?? "0" }
}

/// What a client sends on the control connection: a request, or an interleaved RTCP packet
/// (`$`, channel, length) that needs no answer.
enum RTSPInbound: Sendable {
    case request(RTSPRequest)
    case interleaved(channel: UInt8)
}

/// A request that cannot be read: the connection answers 400 and closes.
struct RTSPDecodeError: Error, CustomStringConvertible {
    let description: String
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
        guard let headEnd = Self.endOfHead(view) else {
            if view.count > Self.maxHead { throw RTSPDecodeError(description: "request head over \(Self.maxHead) bytes") }
            return .needMoreData
        }
        let headLength = headEnd - view.startIndex
        guard let text = buffer.getString(at: buffer.readerIndex, length: headLength) else {
            throw RTSPDecodeError(description: "unreadable request head")
        }
        var request = try Self.parseHead(text)
        let bodyLength = request.header("Content-Length").map { PeerNumber.integer($0, in: 0...Int.max) ?? -1 } ?? 0
        guard (0...Self.maxBody).contains(bodyLength) else { throw RTSPDecodeError(description: "bad Content-Length") }
        guard buffer.readableBytes >= headLength + 4 + bodyLength else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: headLength + 4)
        request.body = buffer.readBytes(length: bodyLength) ?? []
        context.fireChannelRead(wrapInboundOut(.request(request)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        .needMoreData
    }

    /// Index of the blank line's "\r\n\r\n" in the head, if all of it is here.
    static func endOfHead(_ view: ByteBufferView) -> Int? {
        var i = view.startIndex
        let end = view.endIndex
        while i + 3 < end {
            if view[i] == 13 && view[i + 1] == 10 && view[i + 2] == 13 && view[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    static func parseHead(_ text: String) throws -> RTSPRequest {
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { throw RTSPDecodeError(description: "empty request") }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard requestLine.count == 3, requestLine[2].hasPrefix("RTSP/1."),
              requestLine[0].allSatisfy({ $0.isLetter || $0 == "_" }) else {
            throw RTSPDecodeError(description: "not an RTSP request line")
        }
        var headers: [(String, String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw RTSPDecodeError(description: "header without a colon") }
            headers.append((String(line[..<colon].trimmingASCIISpaces()),
                            String(line[line.index(after: colon)...].trimmingASCIISpaces())))
            if headers.count > 64 { throw RTSPDecodeError(description: "too many headers") }
        }
        return RTSPRequest(method: String(requestLine[0]), uri: String(requestLine[1]), headers: headers, body: [])
    }
}

/// An RTSP response.
struct RTSPResponse: Sendable {
    var status: Int
    var reason: String
    var headers: [(String, String)] = []
    var body: String = ""

    init(_ status: Int, _ reason: String, headers: [(String, String)] = [], body: String = "") {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    func encoded(cseq: String) -> String {
        var text = "RTSP/1.0 \(status) \(reason)\r\nCSeq: \(cseq)\r\nServer: LiveRelay\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + body
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
