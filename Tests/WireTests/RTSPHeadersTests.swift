import Testing
import Wire

@Suite("RTSP headers from a peer", .tags(.fast))
struct RTSPHeadersTests {
    @Test("Session: a usable timeout is kept; 1e20, inf, nan, empty, negative and garbage give none")
    func sessionTimeouts() throws {
        #expect(RTSPSessionHeader(parsing: "12345678;timeout=60") == RTSPSessionHeader(id: "12345678", timeout: 60))
        #expect(RTSPSessionHeader(parsing: " abc ; Timeout = 30.0 ")?.timeout == 30)
        for bad in ["1e20", "", "inf", "nan", "-5", "0x10", "9999999999999999999999", "60abc", "\u{FFFD}"] {
            let h = try #require(RTSPSessionHeader(parsing: "x;timeout=\(bad)"))
            #expect(h.id == "x")
            #expect(h.timeout == nil, "timeout=\(bad)")
            #expect(h.unusableTimeout == String(bad.prefix(64)), "timeout=\(bad)")
        }
        #expect(RTSPSessionHeader(parsing: "x;timeout") == RTSPSessionHeader(id: "x"))
        #expect(RTSPSessionHeader(parsing: ";timeout=60") == nil)
        #expect(RTSPSessionHeader(parsing: "") == nil)
        #expect(RTSPSessionHeader(parsing: "x;;;=;==;timeout==5")?.timeout == nil)
    }

    @Test("Transport: pairs in range or left out; a single number needs its successor to fit")
    func transports() throws {
        let t = try #require(RTSPTransportSpec(parsing: "RTP/AVP;unicast;client_port=5000-5001;server_port=6970-6971;source=10.0.0.2;ssrc=1A2B3C4D;mode=\"PLAY\""))
        #expect(t.clientPort == .init(rtp: 5000, rtcp: 5001))
        #expect(t.serverPort == .init(rtp: 6970, rtcp: 6971))
        #expect(t.source == "10.0.0.2")
        #expect(t.ssrc == 0x1A2B_3C4D)
        #expect(t.mode == "PLAY")
        #expect(!t.isInterleaved && t.isRTP)
        #expect(RTSPTransportSpec(parsing: "rtp/avp/tcp;interleaved=4")?.interleaved == .init(rtp: 4, rtcp: 5))
        #expect(RTSPTransportSpec(parsing: "RTP/AVP/TCP;interleaved=255")?.interleaved == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP/TCP;interleaved=9223372036854775807")?.interleaved == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP;client_port=65535")?.clientPort == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP;client_port=0-1")?.clientPort == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP;client_port=-")?.clientPort == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP;client_port=1-2-3")?.clientPort == nil)
        #expect(RTSPTransportSpec(parsing: "RTP/AVP;ssrc=123456789")?.ssrc == nil)
        #expect(RTSPTransportSpec(parsing: ";;;") == nil)
        let list = RTSPTransportSpec.parseList("RTP/AVP;multicast, RTP/AVP/TCP;unicast;interleaved=0-1")
        #expect(list.count == 2 && list[0].isMulticast && list[1].interleaved == .init(rtp: 0, rtcp: 1))
        #expect(RTSPTransportSpec.parseList(String(repeating: "RTP/AVP,", count: 1000)).count == 16)
        let again = try #require(RTSPTransportSpec(parsing: t.headerValue))
        #expect(again == t)
    }

    @Test("Public: methods uppercased, bounded")
    func publicHeader() {
        #expect(RTSPPublicHeader.methods("OPTIONS, describe,GET_PARAMETER ,,") == ["OPTIONS", "DESCRIBE", "GET_PARAMETER"])
        #expect(RTSPPublicHeader.methods(String(repeating: "A,B,", count: 10_000)).count == 2)
    }
}

@Suite("Numbers and text from a peer", .tags(.fast))
struct PeerInputTests {
    @Test("Saturating conversions never trap")
    func saturating() {
        #expect(Int64(saturating: .nan) == 0)
        #expect(Int64(saturating: .infinity) == .max)
        #expect(Int64(saturating: -.infinity) == .min)
        #expect(UInt64(saturating: 1e20) == .max)
        #expect(UInt64(saturating: -1) == 0)
        #expect(Int32(saturating: 12.9) == 12)
        #expect(Int64(saturating: 9.223372036854775807e18) == .max)
        #expect(Int.saturatingAdd(.max, 1) == .max)
        #expect(Int.saturatingAdd(.min, -1) == .min)
        #expect(Int64.saturatingMultiply(.max / 2, 3) == .max)
        #expect(Int64.saturatingMultiply(.max / 2, -3) == .min)
        #expect(PeerNumber.nanoseconds(.nan) == 0)
        #expect(PeerNumber.nanoseconds(1.5) == 1_500_000_000)
    }

    @Test("Peer numbers: decimal only and in range")
    func numbers() {
        #expect(PeerNumber.integer(" 42 ", in: 0...100) == 42)
        #expect(PeerNumber.integer("101", in: 0...100) == nil)
        #expect(PeerNumber.integer("99999999999999999999999", in: Int.min...Int.max) == nil)
        #expect(PeerNumber.integer("", in: 0...100) == nil)
        #expect(PeerNumber.decimal("1e3", in: 0...1e4) == 1000)
        #expect(PeerNumber.decimal("inf", in: 0...Double.greatestFiniteMagnitude) == nil)
        #expect(PeerNumber.decimal("nan", in: 0...1) == nil)
        #expect(PeerNumber.decimal("0x1p3", in: 0...100) == nil)
        #expect(PeerNumber.decimal("1e400", in: 0...Double.greatestFiniteMagnitude) == nil)
    }

    @Test("Text search on invalid UTF-8 and odd text, byte by byte")
    func text() {
        let bad = String(decoding: [0x73, 0x72, 0x74, 0xFF, 0xFE, 0x3A, 0x2F, 0x2F, 0xC3], as: UTF8.self)
        #expect(bad.utf8Contains("://"))
        #expect(!bad.utf8Contains("rtsp"))
        #expect("#EXT-X-ENDLIST\n".utf8Contains("#EXT-X-ENDLIST"))
        #expect("RTP/avp/Tcp".utf8ContainsIgnoringCase("AVP/TCP"))
        #expect("Digest realm".hasPrefixIgnoringCase("digest"))
        #expect(!"Dig".hasPrefixIgnoringCase("digest"))
        #expect("  a b \r\n".trimmingASCIISpaces() == "a b")
        #expect("   ".trimmingASCIISpaces() == "")
        #expect("a;b;c".replacingAll(";", with: ",") == "a,b,c")
        #expect("a=".field(1, separator: "=") == nil)
        #expect("a=b".field(1, separator: "=") == "b")
        #expect("é=x".equalsIgnoringCase("É=X") == false)
    }
}
