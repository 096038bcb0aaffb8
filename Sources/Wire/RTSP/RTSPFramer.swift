/// Framing of an RTSP connection (RFC 2326 §10.12) for both sides: LiveRelay's RTSP client
/// splits a camera's bytes into responses and interleaved media, its RTSP server a player's
/// into requests and interleaved RTCP. One framer, bounded in head and body; nothing here traps
/// on a peer's bytes.

/// What comes next on an RTSP connection: a message, or data interleaved on it (`$`, channel,
/// 16-bit length, payload).
public enum RTSPFrame: Sendable {
    case request(RTSPRequest)
    case response(RTSPResponse)
    /// `payload` is a slice of the bytes given to `RTSPFramer.next(in:)` (no copy).
    case interleaved(channel: UInt8, payload: ArraySlice<UInt8>)
}

/// Splits the bytes received on an RTSP connection into frames. It holds no state: the caller
/// keeps the bytes, passes those not yet taken, and drops what each step says it consumed.
public struct RTSPFramer: Sendable {
    /// Which side reads.
    public enum Side: Sendable {
        /// Reads responses and interleaved data. Bytes that start neither are skipped up to the
        /// next `$` or `RTSP/` (camera firmware sends stray bytes, and requests the client does
        /// not serve).
        case client
        /// Reads requests and interleaved data; anything else is an error.
        case server
    }

    /// One step of framing.
    public enum Step: Sendable {
        /// A whole frame; the first `consumed` bytes (stray bytes skipped before it included)
        /// are done with.
        case frame(RTSPFrame, consumed: Int)
        /// More bytes are needed; the first `consumed` bytes (stray bytes skipped) are done with.
        case needsMore(consumed: Int)
    }

    public let side: Side
    /// The longest head taken (request or status line and header fields, without the blank
    /// line); a longer one is an error, whether or not its end has arrived.
    public let maxHead: Int
    /// The longest body taken (`Content-Length`); a larger one is an error.
    public let maxBody: Int

    /// LiveRelay's RTSP client reading a camera: heads ≤ 64 KiB, bodies (an SDP) ≤ 1 MiB.
    public static let camera = RTSPFramer(side: .client, maxHead: 64 << 10, maxBody: 1 << 20)
    /// LiveRelay's RTSP server reading a player: heads ≤ 16 KiB, bodies ≤ 64 KiB.
    public static let player = RTSPFramer(side: .server, maxHead: 16 << 10, maxBody: 64 << 10)

    /// `maxHead` and `maxBody` are kept within 0…1 GiB.
    public init(side: Side, maxHead: Int, maxBody: Int) {
        self.side = side
        self.maxHead = min(max(0, maxHead), 1 << 30)
        self.maxBody = min(max(0, maxBody), 1 << 30)
    }

    /// The next frame at the start of `bytes`, or how many bytes may be dropped while more are
    /// awaited. Throws for a head that cannot be read, a head longer than `maxHead`, and a
    /// `Content-Length` that is not a number in 0…`maxBody` (the connection then ends; a
    /// server answers 400 first).
    public func next(in bytes: ArraySlice<UInt8>) throws(RTSPMessageError) -> Step {
        var rest = bytes
        var skipped = 0
        while let first = rest.first {
            if first == 0x24 { // '$'
                guard let (frame, length) = Self.interleaved(rest) else { return .needsMore(consumed: skipped) }
                return .frame(frame, consumed: skipped + length)
            }
            if side == .client {
                guard rest.count >= 5 else { return .needsMore(consumed: skipped) }
                guard rest.starts(with: "RTSP/".utf8) else {
                    // Stray bytes: resynchronise at the next byte that may start a frame.
                    let after = rest.dropFirst()
                    let next = after.firstIndex(where: { $0 == 0x24 || $0 == 0x52 }) ?? after.endIndex
                    skipped += rest.distance(from: rest.startIndex, to: next)
                    rest = rest[next...]
                    continue
                }
            }
            guard let (frame, length) = try message(rest) else { return .needsMore(consumed: skipped) }
            return .frame(frame, consumed: skipped + length)
        }
        return .needsMore(consumed: skipped)
    }

    /// `$`, channel, length (big-endian), payload: nil until all of it is here.
    private static func interleaved(_ bytes: ArraySlice<UInt8>) -> (RTSPFrame, Int)? {
        var header = bytes.makeIterator()
        _ = header.next()
        guard let channel = header.next(), let high = header.next(), let low = header.next() else { return nil }
        let length = Int(high) << 8 | Int(low)
        let rest = bytes.dropFirst(4)
        guard rest.count >= length else { return nil }
        return (RTSPFrame.interleaved(channel: channel, payload: rest.prefix(length)), 4 + length)
    }

    /// A request (server) or response (client) with its body: nil until all of it is here.
    private func message(_ bytes: ArraySlice<UInt8>) throws(RTSPMessageError) -> (RTSPFrame, Int)? {
        // The end is looked for only as far as the longest head allowed.
        let window = bytes.prefix(maxHead + 4)
        guard let headLength = RTSPMessageHead.end(of: window) else {
            if window.count >= maxHead + 4 {
                throw RTSPMessageError("a \(side == .client ? "response" : "request") head longer than \(maxHead) bytes")
            }
            return nil
        }
        let head = bytes.prefix(headLength)
        let afterHead = bytes.dropFirst(headLength + 4)
        // The body its Content-Length announces: nil until all of it is here.
        func body(_ headers: RTSPHeaderFields) throws(RTSPMessageError) -> [UInt8]? {
            let length = try RTSPMessageHead.contentLength(headers, max: maxBody)
            return afterHead.count >= length ? Array(afterHead.prefix(length)) : nil
        }
        switch side {
        case .server:
            var request = try RTSPMessageHead.request(head)
            guard let body = try body(request.headers) else { return nil }
            request.body = body
            return (RTSPFrame.request(request), headLength + 4 + body.count)
        case .client:
            var response = try RTSPMessageHead.response(head)
            guard let body = try body(response.headers) else { return nil }
            response.body = body
            return (RTSPFrame.response(response), headLength + 4 + body.count)
        }
    }
}
