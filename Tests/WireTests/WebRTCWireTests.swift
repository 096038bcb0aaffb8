import Crypto
import Testing
import Wire

@Suite("WebRTC wire: STUN, SDP offers, RTCP feedback", .tags(.fast))
struct WebRTCWireTests {
    /// RFC 5769 §2.1: a sample Binding request with USERNAME, MESSAGE-INTEGRITY (password
    /// "VOkJxbRl1RmTxUk/WvJxBt") and FINGERPRINT.
    static let sampleRequest: [UInt8] = [
        0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
        0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c, 0x69, 0x65, 0x6e, 0x74,
        0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff,
        0x80, 0x29, 0x00, 0x08, 0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36,
        0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76, 0x59, 0x20, 0x20, 0x20,
        0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e, 0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49, 0xc1, 0xb5, 0x71, 0xa2,
        0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
    ]

    @Test("RFC 5769's sample request: parsed, its FINGERPRINT and MESSAGE-INTEGRITY verify")
    func rfc5769Request() throws {
        let raw = Self.sampleRequest
        let m = try #require(STUNMessage(parsing: raw))
        #expect(m.type == STUNMessage.bindingRequest)
        #expect(m.username == "evtj:h6vY")
        #expect(m.fingerprintMatches(raw))
        let covered = try #require(m.integrityInput(raw))
        let mac = try #require(m.attribute(STUNMessage.Attribute.messageIntegrity))
        let key = SymmetricKey(data: Array("VOkJxbRl1RmTxUk/WvJxBt".utf8))
        #expect(HMAC<Insecure.SHA1>.isValidAuthenticationCode(mac, authenticating: covered, using: key))
        // One bit flipped anywhere: the FINGERPRINT (or the parse) says so.
        for i in stride(from: 0, to: raw.count, by: 7) {
            var b = raw
            b[i] ^= 0x10
            if let bad = STUNMessage(parsing: b) { #expect(!bad.fingerprintMatches(b), "byte \(i)") }
        }
    }

    @Test("An answer round-trips: integrity and fingerprint written, read back, verified")
    func answerRoundTrip() throws {
        let tid: [UInt8] = Array(1...12)
        let key = SymmetricKey(data: Array("secret-password".utf8))
        let reply = STUNMessage(type: STUNMessage.bindingSuccess, transactionID: tid, attributes: [
            (STUNMessage.Attribute.xorMappedAddress, STUNMessage.xorMappedAddress(ip: [192, 0, 2, 1], port: 32853, transactionID: tid)),
        ])
        let raw = reply.serialized(integrity: { Array(HMAC<Insecure.SHA1>.authenticationCode(for: $0, using: key)) })
        let back = try #require(STUNMessage(parsing: raw))
        #expect(back.type == STUNMessage.bindingSuccess && back.transactionID == tid && back.fingerprintMatches(raw))
        let mac = try #require(back.attribute(STUNMessage.Attribute.messageIntegrity))
        #expect(HMAC<Insecure.SHA1>.isValidAuthenticationCode(mac, authenticating: try #require(back.integrityInput(raw)), using: key))
        // RFC 5769 §2.2's XOR-MAPPED-ADDRESS: 192.0.2.1:32853 under its transaction id.
        let sampleTID: [UInt8] = [0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae]
        #expect(STUNMessage.xorMappedAddress(ip: [192, 0, 2, 1], port: 32853, transactionID: sampleTID) == [0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43])
    }

    @Test("Broken STUN is nil, never a trap")
    func brokenSTUN() {
        let raw = Self.sampleRequest
        for n in [0, 1, 19, 20, 21, 50, raw.count - 1] { #expect(STUNMessage(parsing: Array(raw.prefix(n))) == nil, "\(n) bytes") }
        var overrun = raw
        overrun[22] = 0xFF // an attribute length past the end
        #expect(STUNMessage(parsing: overrun) == nil)
        var header = raw
        header[3] = 0x5C // the message length is not the datagram's
        #expect(STUNMessage(parsing: header) == nil)
        #expect(STUNMessage(parsing: [UInt8](repeating: 0, count: 20)) == nil, "no magic cookie")
    }

    /// What Chromium offers for WHEP, cut down: bundle, session credentials in each section.
    static let chromeOffer = """
    v=0\r
    o=- 4611731400430051336 2 IN IP4 127.0.0.1\r
    s=-\r
    t=0 0\r
    a=group:BUNDLE 0 1\r
    a=extmap-allow-mixed\r
    m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 106 107\r
    c=IN IP4 0.0.0.0\r
    a=ice-ufrag:Ab1c\r
    a=ice-pwd:abcdefghijklmnopqrstuvwx\r
    a=fingerprint:sha-256 0a:1b:2c:3d:4e:5f:60:71:82:93:a4:b5:c6:d7:e8:f9:0a:1b:2c:3d:4e:5f:60:71:82:93:a4:b5:c6:d7:e8:f9\r
    a=setup:actpass\r
    a=mid:0\r
    a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r
    a=recvonly\r
    a=rtcp-mux\r
    a=rtpmap:96 VP8/90000\r
    a=rtcp-fb:96 nack\r
    a=rtpmap:97 rtx/90000\r
    a=fmtp:97 apt=96\r
    a=rtpmap:102 H264/90000\r
    a=rtcp-fb:102 nack\r
    a=rtcp-fb:102 nack pli\r
    a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r
    a=rtpmap:106 H264/90000\r
    a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
    a=rtpmap:103 H264/90000\r
    a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f\r
    a=rtpmap:107 rtx/90000\r
    m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r
    c=IN IP4 0.0.0.0\r
    a=ice-ufrag:Ab1c\r
    a=ice-pwd:abcdefghijklmnopqrstuvwx\r
    a=mid:1\r
    a=sendrecv\r
    a=rtpmap:111 opus/48000/2\r
    a=fmtp:111 minptime=10;useinbandfec=1\r
    a=rtpmap:0 PCMU/8000\r
    a=ssrc:1234567 cname:x\r

    """

    @Test("GStreamer's offer: an audio section bundle-only, port 0, is still offered (RFC 8843)")
    func bundleOnlySection() throws {
        let text = ["v=0", "o=- 1 0 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE video0 audio1",
                    "m=video 9 UDP/TLS/RTP/SAVPF 102", "a=mid:video0", "a=recvonly", "a=rtpmap:102 H264/90000",
                    "m=audio 0 UDP/TLS/RTP/SAVPF 111", "a=bundle-only", "a=mid:audio1", "a=recvonly", "a=rtpmap:111 OPUS/48000",
                    "m=audio 0 UDP/TLS/RTP/SAVPF 0", "a=mid:rejected", "a=rtpmap:0 PCMU/8000"].joined(separator: "\r\n")
        let o = try #require(SessionDescription(parsing: text))
        #expect(o.media.map(\.isActive) == [true, true, false])
        #expect(o.media[1].formats.first?.codec == "opus" && o.media[1].formats.first?.clockRate == 48000)
    }

    @Test("A browser's offer: credentials, fingerprint, formats with their parameters and feedback")
    func chromeOffer() throws {
        let o = try #require(SessionDescription(parsing: Self.chromeOffer))
        #expect(o.media.count == 2)
        let v = o.media[0], a = o.media[1]
        #expect(v.kind == "video" && v.mid == "0" && v.direction == "recvonly" && v.rtcpMux)
        #expect(o.credentials(v)?.ufrag == "Ab1c" && o.credentials(v)?.pwd == "abcdefghijklmnopqrstuvwx")
        #expect(o.fingerprint(v)?.hasPrefix("sha-256 0A:1B:2C") == true, "hex uppercased as the server writes its own")
        let h264 = v.formats.filter { $0.codec == "h264" }
        #expect(h264.map(\.payloadType) == [102, 103, 106])
        #expect(h264.first { $0.payloadType == 106 }?.parameters["profile-level-id"] == "42e01f")
        #expect(h264.first { $0.payloadType == 102 }?.feedback == ["nack", "nack pli"])
        #expect(v.extensions["http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"] == 3)
        #expect(a.formats.first?.codec == "opus" && a.formats.first?.clockRate == 48000 && a.formats.first?.channels == 2)
        #expect(a.formats.first { $0.payloadType == 0 }?.codec == "pcmu")
        #expect(a.ssrcs == [1234567])
    }

    @Test("Not an offer, or hostile: nil or capped, never a trap")
    func hostileOffers() {
        #expect(SessionDescription(parsing: "") == nil)
        #expect(SessionDescription(parsing: "hello") == nil)
        #expect(SessionDescription(parsing: "v=0\r\n") == nil, "no media")
        #expect(SessionDescription(parsing: String(repeating: "a", count: 70_000)) == nil)
        let many = "v=0\r\n" + String(repeating: "m=video 9 X 96\r\na=rtpmap:96 H264/99999999999999999999\r\na=fmtp:96 \r\na=rtcp-fb:* nack\r\n", count: 40)
        let o = SessionDescription(parsing: many)
        #expect(o?.media.count == 16, "sections capped")
        #expect(o?.media.first?.formats.first?.clockRate == 0, "a clock rate that does not fit is no clock rate")
        #expect(SessionDescription(parsing: "v=0\nm=\na=\na=:\na=rtpmap:\na=fmtp:x\na=ssrc:-1\nm=audio 99999999 Y\n")?.media.count == 1)
    }

    @Test("RTCP feedback: NACK bitmasks, PLI, FIR in a compound packet; lengths that lie end it")
    func feedback() {
        // Receiver report (skipped), NACK of 100 and 101, 103 (mask 0b101), PLI, FIR.
        let rr: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 1]
        let nack: [UInt8] = [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 9, 0, 100, 0, 0b101]
        let pli: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 9]
        let fir: [UInt8] = [0x84, 206, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 0, 0]
        #expect(RTCPMessage.parse(rr + nack + pli + fir) == [.nack(ssrc: 9, sequenceNumbers: [100, 101, 103]), .pli(ssrc: 9), .fir(ssrc: 9)])
        var lying = nack
        lying[3] = 200
        #expect(RTCPMessage.parse(rr + lying + pli).isEmpty)
        #expect(RTCPMessage.parse([0x81, 205, 0, 0xFF]).isEmpty)
        #expect(RTCPMessage.parse([0x81, 206, 0, 0]).isEmpty)
        #expect(RTCPMessage.isRTCP([0x80, 200]) && !RTCPMessage.isRTCP([0x80, 96]))
    }

    @Test("RTCP from a sender: its report's clock as Unix time, BYE; a clock before 1970 and a short report say nothing")
    func senderReportAndBye() {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        // 1 790 000 000.5 s after 1970, RTP time 90 000.
        let sr: [UInt8] = [0x80, 200, 0, 6] + be(7) + be(3_998_988_800) + be(0x8000_0000) + be(90_000) + be(10) + be(1000)
        let bye: [UInt8] = [0x81, 203, 0, 1] + be(7)
        #expect(RTCPMessage.parse(sr + bye) == [.senderReport(ssrc: 7, unixMicros: 1_790_000_000_500_000, rtpTime: 90_000), .bye])
        var unset = sr
        unset.replaceSubrange(8..<12, with: be(5))
        #expect(RTCPMessage.parse(unset + bye) == [.bye])
        #expect(RTCPMessage.parse([0x80, 200, 0, 1] + be(7)).isEmpty)
        // 20 bytes: the clock and the RTP time, but not the counts a report must carry.
        #expect(RTCPMessage.parse([0x80, 200, 0, 4] + be(7) + be(3_998_988_800) + be(0) + be(90_000)).isEmpty)
        // Read from a slice of a larger buffer as from an array.
        let framed = [0x24, 1, 0, 28] + sr
        #expect(RTCPMessage.parse(framed[4...]) == [.senderReport(ssrc: 7, unixMicros: 1_790_000_000_500_000, rtpTime: 90_000)])
    }
}
