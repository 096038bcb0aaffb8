/// RTSP messages (RFC 2326 §6–7) for both sides: LiveRelay's RTSP client reads responses from a
/// camera, its RTSP server reads requests from a player. One head parser, one header lookup
/// (names compared without case), bounded in size; nothing here traps on a peer's bytes.

/// Header fields in the order received; repeated names kept.
public struct RTSPHeaderFields: Sendable, Equatable {
    public var fields: [Field]

    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) { self.name = name; self.value = value }
    }

    public init(_ fields: [(String, String)] = []) { self.fields = fields.map { Field($0.0, $0.1) } }

    /// The first value of `name` (any case).
    public subscript(name: String) -> String? { fields.first { $0.name.equalsIgnoringCase(name) }?.value }
    /// Every value of `name`, in order.
    public func all(_ name: String) -> [String] { fields.filter { $0.name.equalsIgnoringCase(name) }.map(\.value) }
    public mutating func append(_ name: String, _ value: String) { fields.append(Field(name, value)) }
}

/// A request (a player's, to the server).
public struct RTSPRequest: Sendable {
    public var method: String
    public var uri: String
    public var headers: RTSPHeaderFields
    public var body: [UInt8]

    public init(method: String, uri: String, headers: RTSPHeaderFields = RTSPHeaderFields(), body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name] }
    /// The CSeq to echo (`0` when missing).
    public var cseq: String { headers["CSeq"] ?? "0" }
}

/// A response (a camera's to the client, or the server's to a player).
public struct RTSPResponse: Sendable {
    public var status: Int
    public var reason: String
    public var headers: RTSPHeaderFields
    public var body: [UInt8]

    public init(_ status: Int, _ reason: String, headers: [(String, String)] = [], body: String = "") {
        self.init(status, reason, headers: RTSPHeaderFields(headers), body: Array(body.utf8))
    }

    public init(_ status: Int, _ reason: String, headers: RTSPHeaderFields, body: [UInt8]) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name] }
    public func headers(_ name: String) -> [String] { headers.all(name) }

    /// The bytes on the wire, with `CSeq`, `Server` and, when there is a body, `Content-Length`.
    public func encoded(cseq: String) -> [UInt8] {
        var text = "RTSP/1.0 \(status) \(reason)\r\nCSeq: \(cseq)\r\nServer: LiveRelay\r\n"
        for f in headers.fields { text += "\(f.name): \(f.value)\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        return Array((text + "\r\n").utf8) + body
    }
}

/// Why a message head cannot be read (the connection ends; a server answers 400 first).
public struct RTSPMessageError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Heads and lengths, the same for both sides.
public enum RTSPMessageHead {
    /// At most this many header fields in one head.
    public static let maxFields = 64

    /// The offset of the `\r\n\r\n` that ends the head, if all of it is here.
    public static func end(of bytes: some RandomAccessCollection<UInt8>) -> Int? {
        var i = bytes.startIndex
        var offset = 0
        while bytes.distance(from: i, to: bytes.endIndex) >= 4 {
            let a = bytes[i], b = bytes[bytes.index(i, offsetBy: 1)], c = bytes[bytes.index(i, offsetBy: 2)], d = bytes[bytes.index(i, offsetBy: 3)]
            if a == 13 && b == 10 && c == 13 && d == 10 { return offset }
            i = bytes.index(after: i)
            offset += 1
        }
        return nil
    }

    /// A request head (without the blank line): `METHOD URI RTSP/1.0` and its fields.
    public static func request(_ head: some Collection<UInt8>) throws(RTSPMessageError) -> RTSPRequest {
        let (start, fields) = try split(head, lenient: false)
        let parts = start.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("RTSP/1."),
              parts[0].utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }) else {
            throw RTSPMessageError("not an RTSP request line")
        }
        return RTSPRequest(method: String(parts[0]), uri: String(parts[1]), headers: fields)
    }

    /// A response head (without the blank line): `RTSP/1.0 200 OK` and its fields.
    public static func response(_ head: some Collection<UInt8>) throws(RTSPMessageError) -> RTSPResponse {
        // A camera's odd line (no colon) is skipped: firmware is often sloppy.
        let (start, fields) = try split(head, lenient: true)
        let parts = start.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("RTSP/"), let status = PeerNumber.integer(parts[1], in: 100...999) else {
            throw RTSPMessageError("bad status line")
        }
        return RTSPResponse(status, parts.count > 2 ? String(parts[2]) : "", headers: fields, body: [])
    }

    /// The body's length from `Content-Length` (0 when absent), at most `max`.
    public static func contentLength(_ fields: RTSPHeaderFields, max: Int) throws(RTSPMessageError) -> Int {
        guard let value = fields["Content-Length"] else { return 0 }
        guard let n = PeerNumber.integer(value, in: 0...max) else { throw RTSPMessageError("bad Content-Length") }
        return n
    }

    private static func split(_ head: some Collection<UInt8>, lenient: Bool) throws(RTSPMessageError) -> (Substring, RTSPHeaderFields) {
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let start = lines.next(), !start.isEmpty else { throw RTSPMessageError("empty head") }
        var fields = RTSPHeaderFields()
        while let line = lines.next() {
            if line.isEmpty { continue }
            guard let colon = line.firstIndex(of: ":") else {
                if lenient { continue }
                throw RTSPMessageError("header without a colon")
            }
            fields.append(String(line[..<colon].trimmingASCIISpaces()), String(line[line.index(after: colon)...].trimmingASCIISpaces()))
            if fields.fields.count > maxFields { throw RTSPMessageError("more than \(maxFields) header fields") }
        }
        return (start, fields)
    }
}
