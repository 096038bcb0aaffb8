import Testing
import Wire

/// Wire's RTSP framing, auth challenges and URLs, as both sides meet them: bytes that arrive in
/// any slices, stray and hostile bytes, and RFC 2617's worked example.
@Suite(.tags(.fast)) struct RTSPFramerTests {
    static let client = RTSPFramer.camera
    static let server = RTSPFramer.player

    /// Every frame in `chunks` fed one after another, each step's consumed bytes dropped as a
    /// connection's reader drops them; and how many bytes are left.
    static func frames(_ chunks: [[UInt8]], _ framer: RTSPFramer) throws -> (frames: [String], left: Int) {
        var buffer: [UInt8] = []
        var start = 0
        var out: [String] = []
        for chunk in chunks {
            buffer += chunk
            reading: while true {
                switch try framer.next(in: buffer[start...]) {
                case .frame(let frame, let consumed):
                    #expect(consumed > 0 && consumed <= buffer.count - start)
                    start += consumed
                    out.append(summary(frame))
                case .needsMore(let consumed):
                    #expect(consumed >= 0 && consumed <= buffer.count - start)
                    start += consumed
                    break reading
                }
            }
        }
        return (out, buffer.count - start)
    }

    static func summary(_ frame: RTSPFrame) -> String {
        switch frame {
        case .request(let r): return "\(r.method) \(r.uri) cseq=\(r.cseq) body=\(String(decoding: r.body, as: UTF8.self))"
        case .response(let r): return "\(r.status) \(r.reason) cseq=\(r.header("cseq") ?? "-") body=\(String(decoding: r.body, as: UTF8.self))"
        case .interleaved(let channel, let payload): return "$\(channel) \(Array(payload))"
        }
    }

    /// `bytes` cut in two at every boundary, and in slices of 1, 2, 3, 7 and 64 bytes.
    static func splits(_ bytes: [UInt8]) -> [[[UInt8]]] {
        var out = (0...bytes.count).map { [Array(bytes[..<$0]), Array(bytes[$0...])] }
        for size in [1, 2, 3, 7, 64] {
            out.append(stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min(bytes.count, $0 + size)]) })
        }
        return out
    }

    // MARK: - Framing

    @Test func requestsAndInterleavedFramesComeOutWholeFromAnySlices() throws {
        let bytes = Array("OPTIONS rtsp://h/cam RTSP/1.0\r\nCSeq: 1\r\n\r\n".utf8) + [0x24, 1, 0, 3, 9, 9, 9]
            + Array("ANNOUNCE rtsp://h/cam RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\n\r\nabcd".utf8) + [0x24, 3, 0, 0]
        for chunks in Self.splits(bytes) {
            let got = try Self.frames(chunks, Self.server)
            #expect(got.frames == ["OPTIONS rtsp://h/cam cseq=1 body=", "$1 [9, 9, 9]", "ANNOUNCE rtsp://h/cam cseq=2 body=abcd", "$3 []"],
                    "\(chunks.map(\.count))")
            #expect(got.left == 0)
        }
    }

    @Test func responsesWithBodiesAndInterleavedMediaBetweenThem() throws {
        let bytes = Array("RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 5\r\n\r\nv=0\r\n".utf8) + [0x24, 0, 0, 2, 0x80, 0x60]
            + Array("RTSP/1.0 401 Unauthorized\r\nCSeq: 2\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\r\n".utf8)
        for chunks in Self.splits(bytes) {
            let got = try Self.frames(chunks, Self.client)
            #expect(got.frames == ["200 OK cseq=1 body=v=0\r\n", "$0 [128, 96]", "401 Unauthorized cseq=2 body="], "\(chunks.map(\.count))")
            #expect(got.left == 0)
        }
    }

    @Test func theClientSkipsStrayBytesAndTheServerRefusesThem() throws {
        let response = Array("RTSP/1.0 200 OK\r\nCSeq: 3\r\n\r\n".utf8)
        let bytes = Array("\r\n\0gaRbage RTS\r\n".utf8) + response + Array("xyz".utf8) + [0x24, 2, 0, 1, 7] + Array("ab".utf8)
        for chunks in Self.splits(bytes) {
            let got = try Self.frames(chunks, Self.client)
            #expect(got.frames == ["200 OK cseq=3 body=", "$2 [7]"], "\(chunks.map(\.count))")
            // Fewer than five bytes cannot tell: they wait.
            #expect(got.left == 2)
        }
        #expect(throws: RTSPMessageError.self) { _ = try Self.frames([Array("GET / HTTP/1.1\r\n\r\n".utf8)], Self.server) }
        #expect(throws: RTSPMessageError.self) { _ = try Self.frames([response], Self.server) }
    }

    @Test func aMessageWaitsForAllOfItsBody() throws {
        let head = Array("RTSP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n".utf8)
        let partial = try Self.frames([head + Array("12345".utf8)], Self.client)
        #expect(partial.frames.isEmpty && partial.left == head.count + 5)
        #expect(try Self.frames([head + Array("1234567890".utf8)], Self.client).frames == ["200 OK cseq=- body=1234567890"])
        // An interleaved frame waits for its header and its payload.
        #expect(try Self.frames([[0x24, 1, 0]], Self.client).left == 3)
        #expect(try Self.frames([[0x24, 1, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 100)], Self.server).frames.isEmpty)
    }

    @Test func aHeadLongerThanItsLimitIsRefusedWhereverItEnds() throws {
        let framer = RTSPFramer(side: .server, maxHead: 64, maxBody: 0)
        let start = "OPTIONS * RTSP/1.0\r\nX: "
        let exact = start + String(repeating: "a", count: 64 - start.utf8.count)
        #expect(try Self.frames([Array((exact + "\r\n\r\n").utf8)], framer).frames == ["OPTIONS * cseq=0 body="])
        #expect(throws: RTSPMessageError.self) { _ = try Self.frames([Array((exact + "a\r\n\r\n").utf8)], framer) }
        // Not ended yet, within the limit: it waits; past it: refused.
        #expect(try Self.frames([Array(exact.utf8)], framer).left == 64)
        #expect(throws: RTSPMessageError.self) { _ = try Self.frames([Array((exact + "aaaa").utf8)], framer) }
        #expect(throws: RTSPMessageError.self) {
            _ = try Self.frames([Array("OPTIONS rtsp://h/cam RTSP/1.0\r\nX: ".utf8) + [UInt8](repeating: 0x41, count: 17 << 10)], Self.server)
        }
        #expect(throws: RTSPMessageError.self) {
            _ = try Self.frames([Array("RTSP/1.0 200 OK\r\nX: ".utf8) + [UInt8](repeating: 0x41, count: 70_000)], Self.client)
        }
    }

    @Test(arguments: ["-1", "99999999999999999999999", "9223372036854775808", "1048577", "0x10", "1e3", "", " 12 34"])
    func aContentLengthThatIsNotANumberInRangeIsRefused(_ length: String) {
        let request = Array("SET_PARAMETER rtsp://h/cam RTSP/1.0\r\nContent-Length: \(length)\r\n\r\n".utf8)
        let response = Array("RTSP/1.0 200 OK\r\nContent-Length: \(length)\r\n\r\n".utf8)
        #expect(throws: RTSPMessageError.self) { _ = try Self.server.next(in: request[...]) }
        #expect(throws: RTSPMessageError.self) { _ = try Self.client.next(in: response[...]) }
        // The server's body limit is lower than the client's.
        #expect(throws: RTSPMessageError.self) { _ = try Self.server.next(in: Array("OPTIONS * RTSP/1.0\r\nContent-Length: 65537\r\n\r\n".utf8)[...]) }
    }

    @Test func aSliceThatDoesNotStartAtZeroIsReadFromItsStart() throws {
        let bytes = Array("junk".utf8) + Array("RTSP/1.0 204 No Content\r\nCSeq: 5\r\n\r\n".utf8)
        guard case .frame(.response(let r), let consumed) = try Self.client.next(in: bytes[4...]) else {
            Issue.record("no response")
            return
        }
        #expect(r.status == 204 && consumed == bytes.count - 4)
    }

    // MARK: - Challenges

    static let rfcChallenge = #"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#

    @Test func rfc2617sWorkedExample() throws {
        #expect(RTSPAuthChallenge(parsing: Self.rfcChallenge) == .digest(.init(realm: "testrealm@host.com", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
                                                                              opaque: "5ccc069c403ebaf9f0171e9517f40e41", qopAuth: true)))
        var credentials = RTSPClientCredentials(user: "Mufasa", password: "Circle Of Life")
        let before = credentials.header(method: "GET", uri: "/dir/index.html")
        #expect(before == nil)
        let taken = credentials.take(challenges: ["Basic realm=\"testrealm@host.com\"", Self.rfcChallenge])
        #expect(taken)
        let first = credentials.header(method: "GET", uri: "/dir/index.html", cnonce: "0a4f113b")
        let header = try #require(first)
        #expect(header == #"Digest username="Mufasa", realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", uri="/dir/index.html", qop=auth, nc=00000001, cnonce="0a4f113b", response="6629fae49393a05397450978507c4ef1", opaque="5ccc069c403ebaf9f0171e9517f40e41", algorithm=MD5"#)
        #expect(RTSPClientCredentials.digestResponse(user: "Mufasa", password: "Circle Of Life", realm: "testrealm@host.com",
                                                     nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093", method: "GET", uri: "/dir/index.html",
                                                     qop: (nc: "00000001", cnonce: "0a4f113b")) == "6629fae49393a05397450978507c4ef1")
        // Without qop (RFC 2069's form).
        #expect(RTSPClientCredentials.digestResponse(user: "Mufasa", password: "Circle Of Life", realm: "testrealm@host.com",
                                                     nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093", method: "GET", uri: "/dir/index.html")
                == "670fd8c2df070c60b045671b8b24ff02")
        // The next request counts on, with a random client nonce of 16 hex digits.
        let second = credentials.header(method: "GET", uri: "/dir/index.html")
        let next = try #require(second)
        let p = RTSPAuthChallenge.parameters(next.dropFirst("Digest".count))
        #expect(p["nc"] == "00000002")
        let cnonce = p["cnonce"] ?? ""
        #expect(cnonce.utf8.count == 16 && cnonce.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }))
    }

    @Test func theChallengeAnsweredIsTheFirstDigestElseBasic() {
        #expect(RTSPAuthChallenge(choosingFrom: ["Basic realm=\"x\""]) == .basic)
        #expect(RTSPAuthChallenge(choosingFrom: ["basic realm=\"x\"", "DIGEST REALM=r, NONCE=n"]) == .digest(.init(realm: "r", nonce: "n")))
        // The first Digest decides: one that cannot be answered is not replaced by Basic.
        #expect(RTSPAuthChallenge(choosingFrom: [#"Digest realm="r", nonce="n", algorithm=SHA-256"#, "Basic realm=\"r\""]) == nil)
        #expect(RTSPAuthChallenge(choosingFrom: [#"Digest realm="r""#]) == nil)
        #expect(RTSPAuthChallenge(choosingFrom: ["Bearer x", ""]) == nil)
        #expect(RTSPAuthChallenge(parsing: #"Digest realm="r", nonce="n", algorithm=md5, qop="auth-int""#) == .digest(.init(realm: "r", nonce: "n")))
        var basic = RTSPClientCredentials(user: "u", password: "p")
        let refused = basic.take(challenges: ["Negotiate"])
        #expect(!refused && !basic.isReady)
        let accepted = basic.take(challenges: ["Basic realm=\"x\""])
        #expect(accepted && basic.isReady)
        let header = basic.header(method: "OPTIONS", uri: "rtsp://h/")
        #expect(header == "Basic dTpw")
    }

    @Test func challengeParametersAreBoundedAndNeverTrap() {
        #expect(RTSPAuthChallenge.parameters(#" realm="a, b", NONCE = xyz , qop="auth""#) == ["realm": "a, b", "nonce": "xyz", "qop": "auth"])
        #expect(RTSPAuthChallenge.parameters(#"realm="unterminated"#) == ["realm": "unterminated"])
        #expect(RTSPAuthChallenge.parameters("no pairs here, at all").isEmpty)
        #expect(RTSPAuthChallenge.parameters("=, ==, \"=\", a=\"").count <= 4)
        let many = (0..<1000).map { "k\($0)=v" }.joined(separator: ", ")
        #expect(RTSPAuthChallenge.parameters(many).count == RTSPAuthChallenge.maxParameters)
        #expect(RTSPAuthChallenge(parsing: "Digest") == nil)
        #expect(RTSPAuthChallenge(parsing: "Dig") == nil)
    }

    // MARK: - URLs

    @Test func aURLWithCredentialsAndIPv6() throws {
        let url = try #require(RTSPURL("rtsp://us%40er:p%3Ass@[::1]:8554/cam?x=1"))
        #expect(url.scheme == .rtsp && url.user == "us@er" && url.password == "p:ss")
        #expect(url.host == "::1" && url.port == 8554 && url.authority == "[::1]:8554")
        #expect(url.pathAndQuery == "/cam?x=1" && url.path == "/cam" && url.query == "x=1")
        #expect(url.withoutCredentials == "rtsp://[::1]:8554/cam?x=1" && url.description == url.withoutCredentials)

        let plain = try #require(RTSPURL("RTSP://cam.local"))
        #expect(plain.port == 554 && plain.user == nil && plain.password == nil && plain.withoutCredentials == "rtsp://cam.local/" && plain.query == nil)
        let tls = try #require(RTSPURL("rtsps://[fe80::1]/live#fragment"))
        #expect(tls.scheme == .rtsps && tls.port == 322 && tls.host == "fe80::1" && tls.withoutCredentials == "rtsps://[fe80::1]/live")
        // The last '@' ends the credentials; a user alone, an empty user, escapes that are not UTF-8.
        let at = try #require(RTSPURL("rtsp://a@b@h:1/x"))
        #expect(at.user == "a@b" && at.password == nil && at.host == "h" && at.port == 1)
        #expect(RTSPURL("rtsp://:secret@h/")?.user == "" && RTSPURL("rtsp://:secret@h/")?.password == "secret")
        #expect(RTSPURL("rtsp://u:%zz%ff@h/")?.password == "%zz%ff")
        #expect(RTSPURL("rtsp://h?x=1")?.withoutCredentials == "rtsp://h?x=1")
    }

    @Test(arguments: ["http://h/", "rtsp://", "rtsp:///x", "rtsp://h:/x", "rtsp://h:0/", "rtsp://h:65536/", "rtsp://h:12a/", "rtsp://h:+5/",
                      "rtsp://[::1/", "rtsp://[]/", "rtsp://[::1]x/", "rtsp://[::1]:/", "rtsp://h/\r\nX: y", "rtsp://u@:554/", "cam", "",
                      "rtsp://h/" + String(repeating: "a", count: 20_000)])
    func aTextThatIsNotAnRTSPURL(_ text: String) {
        #expect(RTSPURL(text) == nil)
    }

    @Test func requestURIsAndEscapes() {
        #expect(RTSPURL.requestPath("rtsp://h:8554/cam/streamid=1?x") == "/cam/streamid=1")
        #expect(RTSPURL.requestPath("rtsp://h") == "/")
        #expect(RTSPURL.requestPath("/cam?x=1") == "/cam")
        #expect(RTSPURL.requestPath("*") == "*")
        #expect(RTSPURL.requestPath("http://h/cam") == nil)
        #expect(RTSPURL.percentDecoded("cam%20two") == "cam two")
        #expect(RTSPURL.percentDecoded("%E2%82%AC") == "€")
        for bad in ["%ff", "100%", "%4", "%zz", "%C3"] {
            #expect(RTSPURL.percentDecoded(bad) == nil, "\(bad)")
        }
    }
}
