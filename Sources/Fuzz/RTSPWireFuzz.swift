import Wire

/// The `rtsp` target's direct half: the same bytes through Wire's RTSP parsers as both sides
/// meet them, without a socket — the framer as the client reads a camera (responses,
/// interleaved media, stray bytes skipped) and as the server reads a player (requests), fed in
/// slices of varying sizes; the `WWW-Authenticate` challenges of each response, answered as
/// the client answers them; and each line as an RTSP URL and as a request URI.
enum RTSPWireFuzz {
    /// The framers `ByteQueue` (client) and `RTSPRequestDecoder` (server) use.
    static let client = RTSPFramer.camera
    static let server = RTSPFramer.player

    static func run(_ bytes: [UInt8]) {
        frames(bytes, client)
        frames(bytes, server)
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(whereSeparator: \.isNewline).prefix(64) {
            challenge([String(line)])
            if let url = RTSPURL(line) { _ = (url.withoutCredentials, url.path, url.query, url.user, url.password) }
            if let path = RTSPURL.requestPath(line) {
                for segment in path.split(separator: "/").prefix(8) { _ = RTSPURL.percentDecoded(segment) }
            }
        }
    }

    /// The bytes as a connection delivers them, in slices of 1, 38, 75… bytes; each step's
    /// consumed bytes dropped, as the client's queue and the server's decoder drop them.
    static func frames(_ bytes: [UInt8], _ framer: RTSPFramer) {
        var buffer: [UInt8] = []
        var start = 0
        var i = 0
        var step = 1
        while i < bytes.count {
            let n = min(bytes.count - i, step)
            buffer += bytes[i..<(i + n)]
            i += n
            step = step % 997 + 37
            reading: while true {
                guard let next = try? framer.next(in: buffer[start...]) else { return }
                switch next {
                case .frame(let frame, let consumed):
                    // A frame that consumed nothing, or more than there was, would loop or trap.
                    precondition(consumed > 0 && consumed <= buffer.count - start, "framer consumed \(consumed) of \(buffer.count - start)")
                    start += consumed
                    look(at: frame)
                case .needsMore(let consumed):
                    precondition(consumed >= 0 && consumed <= buffer.count - start, "framer skipped \(consumed) of \(buffer.count - start)")
                    start += consumed
                    break reading
                }
            }
        }
    }

    static func look(at frame: RTSPFrame) {
        switch frame {
        case .request(let r):
            _ = (r.cseq, r.header("Transport").map { RTSPTransportSpec.parseList($0) }, r.header("Session").flatMap { RTSPSessionHeader(parsing: $0) })
            _ = RTSPURL.requestPath(r.uri)
        case .response(let r):
            _ = (r.header("Public").map { RTSPPublicHeader.methods($0) }, r.header("Session").flatMap { RTSPSessionHeader(parsing: $0) })
            challenge(r.headers("WWW-Authenticate"))
        case .interleaved(_, let payload):
            _ = payload.count
        }
    }

    /// A 401's challenges, answered twice (the nonce count moves on).
    static func challenge(_ values: [String]) {
        for v in values.prefix(8) { _ = (RTSPAuthChallenge(parsing: v), RTSPAuthChallenge.parameters(v)) }
        var credentials = RTSPClientCredentials(user: "user", password: "pass")
        guard credentials.take(challenges: values) else { return }
        _ = credentials.header(method: "DESCRIBE", uri: "rtsp://127.0.0.1/cam")
        _ = credentials.header(method: "SETUP", uri: "rtsp://127.0.0.1/cam/trackID=1", cnonce: "0a4f113b")
    }
}
