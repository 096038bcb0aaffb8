import Testing
import Wire

/// The one SDP parser, read as the RTSP client reads a camera's answer (and as the bench's
/// WHEP viewer reads the server's).
@Suite(.tags(.fast)) struct SessionDescriptionTests {
    /// A camera's DESCRIBE answer, as gst-rtsp-server writes it with an AAC microphone, and a
    /// stray bare `\n`.
    static let camera = """
    v=0\r
    o=- 1188340656180883 1 IN IP4 127.0.0.1\r
    s=Session streamed with GStreamer\r
    t=0 0\r
    a=control:rtsp://127.0.0.1:8554/cam/\r
    m=video 0 RTP/AVP 96\r
    a=rtpmap:96 H264/90000\r
    a=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==;profile-level-id=42c01e\r
    a=control:stream=0\r
    m=audio 0 RTP/AVP 97\r
    a=rtpmap:97 MPEG4-GENERIC/16000\r
    a=fmtp:97 streamtype=5;profile-level-id=2;mode=AAC-hbr;config=1408;sizelength=13;indexlength=3;indexdeltalength=3\n
    a=control:stream=1\r
    m=audio 0 RTP/AVP 0\r
    a=control:trackID=3\r

    """

    @Test func aCamerasAnswer() throws {
        let sdp = try #require(SessionDescription(parsing: Self.camera, limits: .camera))
        #expect(sdp.control == "rtsp://127.0.0.1:8554/cam/")
        #expect(sdp.media.map(\.kind) == ["video", "audio", "audio"])
        let video = try #require(sdp.media.first?.formats.first)
        #expect(video.codec == "h264" && video.clockRate == 90000 && video.channels == nil)
        #expect(video.parameters["sprop-parameter-sets"] == "Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==")
        let aac = try #require(sdp.media[1].formats.first)
        #expect(aac.codec == "mpeg4-generic" && aac.clockRate == 16000 && aac.channels == nil, "no channels given: AAC's config says")
        #expect(aac.parameters["sizelength"] == "13" && aac.parameters["config"] == "1408")
        // A static payload type needs no rtpmap.
        #expect(sdp.media[2].formats.first == SessionDescription.Format(payloadType: 0, codec: "pcmu", clockRate: 8000, channels: 1))
        #expect(sdp.media.map(\.control) == ["stream=0", "stream=1", "trackID=3"])
        #expect(SessionDescription.resolve(control: sdp.media[0].control, base: sdp.control ?? "") == "rtsp://127.0.0.1:8554/cam/stream=0")
        #expect(SessionDescription.resolve(control: "rtsps://h/x", base: "rtsp://h/") == "rtsps://h/x")
        #expect(SessionDescription.resolve(control: "*", base: "rtsp://h/cam") == "rtsp://h/cam")
        #expect(SessionDescription.resolve(control: "t1", base: "rtsp://h/cam") == "rtsp://h/cam/t1")
    }

    /// A camera may leave out `v=` or describe no media while it boots; a peer's offer may not.
    @Test func theLimitsSayWhatATextMustHold() {
        #expect(SessionDescription(parsing: "m=video 0 RTP/AVP 96\r\n", limits: .camera)?.media.count == 1)
        #expect(SessionDescription(parsing: "m=video 0 RTP/AVP 96\r\n", limits: .peer) == nil)
        #expect(SessionDescription(parsing: "v=0\r\ns=booting\r\n", limits: .camera)?.media.isEmpty == true)
        #expect(SessionDescription(parsing: String(repeating: "a=x\r\n", count: 20_000), limits: .camera) != nil)
        #expect(SessionDescription(parsing: String(repeating: "a=x\r\n", count: 300_000), limits: .camera) == nil)
    }

    @Test func anAnswersCandidates() throws {
        let text = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=candidate:1 1 UDP 2130706431 127.0.0.1 40000 typ host\r\n"
            + "a=candidate:2 1 TCP 1518280447 127.0.0.1 40001 typ host tcptype passive\r\na=candidate:x\r\n"
            + "a=candidate:3 1 udp 1 127.0.0.1 99999 typ host\r\n"
        let sdp = try #require(SessionDescription(parsing: text))
        #expect(sdp.media[0].candidates == [
            .init(foundation: "1", transport: "udp", priority: 2_130_706_431, address: "127.0.0.1", port: 40000, type: "host"),
            .init(foundation: "2", transport: "tcp", priority: 1_518_280_447, address: "127.0.0.1", port: 40001, type: "host", tcpType: "passive"),
        ])
    }
}

/// Addresses a peer or a proxy writes: parsed without a trap, written as NIO writes them.
@Suite(.tags(.fast)) struct IPAddressTests {
    @Test func addressesAndNetworks() throws {
        #expect(IPAddress("192.0.2.7")?.description == "192.0.2.7")
        #expect(IPAddress("[0:0:0:0:0:0:0:1]")?.description == "::1")
        #expect(IPAddress("2001:db8:0:0:1:0:0:1")?.description == "2001:db8::1:0:0:1")
        #expect(IPAddress("::ffff:192.0.2.7")?.unmapped.description == "192.0.2.7")
        #expect(IPAddress("fe80::1%eth0")?.description == "fe80::1")
        for bad in ["", "1.2.3", "1.2.3.256", "+1::", "1:::2", "1::2::3", "12345::", "::g", "1.2.3.4.5", String(repeating: "1", count: 100)] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        let n = try #require(IPNetwork("10.0.0.0/8"))
        #expect(n.contains(IPAddress("10.9.8.7")!) && !n.contains(IPAddress("11.0.0.1")!) && n.contains(IPAddress("::ffff:10.1.1.1")!))
        #expect(IPNetwork("10.0.0.0/-0") == nil && IPNetwork("10.0.0.0/33") == nil && IPNetwork("::/129") == nil)
        #expect(IPNetwork("2001:db8::/32")?.contains(IPAddress("2001:db8:ffff::1")!) == true)
    }

    @Test func forwardedHops() {
        #expect(ForwardedFor.hops("203.0.113.1, 198.51.100.7:5000 ,[2001:db8::1]:443, unknown") ==
                [IPAddress("203.0.113.1"), IPAddress("198.51.100.7"), IPAddress("2001:db8::1"), nil])
        // A long header keeps its nearest hops.
        let long = String(repeating: "x,", count: 5000) + "198.51.100.66"
        #expect(ForwardedFor.hops(long).last == IPAddress("198.51.100.66"))
    }
}
