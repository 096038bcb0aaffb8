import Testing
import Wire

/// The one SDP writer: what it writes the parser reads back as the same value, every line ends
/// with CRLF, and the lines browsers and RTSP players look for are where they look for them.
@Suite(.tags(.fast)) struct SessionDescriptionWriterTests {
    /// An answer as LiveRelay's WHEP server makes it: ICE-lite, one bundle, credentials and
    /// fingerprint at both levels, an SSRC with its cname and msid, two header extensions,
    /// UDP and ICE-TCP host candidates, and a rejected section.
    static func answer() -> SessionDescription {
        var d = SessionDescription(origin: .init(sessionID: 4_242_424_242, sessionVersion: 1), sessionName: "LiveRelay")
        d.iceLite = true
        d.bundle = ["0", "1"]
        d.attributes = ["msid-semantic: WMS liverelay"]
        d.iceUfrag = "srv1"
        d.icePwd = "abcdefghijklmnopqrstuvwx"
        d.fingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
        let candidates: [SessionDescription.Candidate] = [
            .init(foundation: "1", transport: "udp", priority: 2_130_706_431, address: "192.0.2.7", port: 40000, type: "host"),
            .init(foundation: "101", transport: "tcp", priority: 1_518_280_447, address: "192.0.2.7", port: 40001, type: "host", tcpType: "passive"),
        ]
        func sending(_ kind: String, mid: String, _ format: SessionDescription.Format) -> SessionDescription.Media {
            var m = SessionDescription.Media(kind: kind, port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: [format])
            m.connection = "IN IP4 0.0.0.0"
            m.mid = mid
            m.iceUfrag = d.iceUfrag
            m.icePwd = d.icePwd
            m.fingerprint = d.fingerprint
            m.setup = "passive"
            m.direction = "sendonly"
            m.rtcpMux = true
            m.rtcpReducedSize = true
            m.candidates = candidates
            m.endOfCandidates = true
            return m
        }
        var video = sending("video", mid: "0", .init(payloadType: 102, codec: "h264", clockRate: 90000,
                                                      parameters: ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42e01f"],
                                                      feedback: ["nack", "nack pli", "ccm fir"]))
        video.extensions = ["http://www.webrtc.org/experiments/rtp-hdrext/playout-delay": 6, "urn:ietf:params:rtp-hdrext:sdes:mid": 4]
        video.msid = "liverelay video0"
        video.ssrcs = [3_000_000_001]
        video.cname = "liverelay"
        var audio = sending("audio", mid: "1", .init(payloadType: 111, codec: "opus", clockRate: 48000, channels: 2,
                                                      parameters: ["minptime": "10", "useinbandfec": "1"]))
        audio.msid = "liverelay audio1"
        audio.ssrcs = [17]
        audio.cname = "liverelay"
        var rejected = SessionDescription.Media(kind: "audio", port: 0, proto: "UDP/TLS/RTP/SAVPF",
                                                formats: [.init(payloadType: 0, codec: "pcmu", clockRate: 8000)])
        rejected.connection = "IN IP4 0.0.0.0"
        rejected.mid = "2"
        rejected.setup = "passive"
        rejected.direction = "inactive"
        rejected.rtcpMux = true
        d.media = [video, audio, rejected]
        return d
    }

    /// A DESCRIBE answer as av_sdp_create writes it for two tracks (with a session-level
    /// connection and aggregate control added): H.264 with its parameter sets, AAC.
    static let camera = """
    v=0\r
    o=- 0 0 IN IP4 127.0.0.1\r
    s=cam\r
    c=IN IP4 0.0.0.0\r
    t=0 0\r
    a=tool:libavformat 61.7.100\r
    a=control:rtsp://192.0.2.9:8554/cam/\r
    m=video 0 RTP/AVP 96\r
    b=AS:2000\r
    a=rtpmap:96 H264/90000\r
    a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==; profile-level-id=42C01E\r
    a=control:streamid=0\r
    m=audio 0 RTP/AVP 97\r
    a=rtpmap:97 MPEG4-GENERIC/44100/2\r
    a=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=1210\r
    a=control:streamid=1\r

    """

    /// The lines of a text (CR left out), and its media sections' lines.
    static func lines(_ text: String) -> [String] {
        text.utf8.split(separator: 0x0A).map { String(decoding: $0.filter { $0 != 0x0D }, as: UTF8.self) }
    }

    static func sections(_ text: String) -> [[String]] {
        var out: [[String]] = []
        for line in lines(text) {
            if line.hasPrefix("m=") { out.append([line]) } else if !out.isEmpty { out[out.count - 1].append(line) }
        }
        return out
    }

    /// Parsed, written, parsed again: the same value.
    func roundTrips(_ text: String, limits: SessionDescription.Limits) throws {
        let d = try #require(SessionDescription(parsing: text, limits: limits))
        let again = try #require(SessionDescription(parsing: d.text, limits: limits), "\(d.text)")
        #expect(again == d, "\(d.text)")
    }

    @Test func aWebRTCAnswerRoundTrips() throws {
        let d = Self.answer()
        let text = d.text
        let back = try #require(SessionDescription(parsing: text))
        #expect(back == d, "\(text)")
        #expect(text.hasPrefix("v=0\r\no=- 4242424242 1 IN IP4 127.0.0.1\r\ns=LiveRelay\r\nt=0 0\r\na=ice-lite\r\na=group:BUNDLE 0 1\r\n"
            + "a=msid-semantic: WMS liverelay\r\na=ice-ufrag:srv1\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=fingerprint:sha-256 AB:"), "\(text)")
        let lines = Self.lines(text)
        for line in ["a=rtpmap:102 H264/90000", "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                     "a=rtcp-fb:102 nack pli", "a=rtcp-fb:102 ccm fir", "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
                     "a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
                     "a=msid:liverelay video0", "a=ssrc:3000000001 cname:liverelay", "a=ssrc:3000000001 msid:liverelay video0",
                     "a=candidate:1 1 udp 2130706431 192.0.2.7 40000 typ host",
                     "a=candidate:101 1 tcp 1518280447 192.0.2.7 40001 typ host tcptype passive",
                     "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:0 PCMU/8000"] {
            #expect(lines.contains(line), "\(line) missing from\n\(text)")
        }
        // Each section: m=, then c=; the attributes in the order browsers write them.
        let sections = Self.sections(text)
        #expect(sections.count == 3)
        for s in sections { #expect(s.count > 1 && s[1] == "c=IN IP4 0.0.0.0", "\(s)") }
        let video = try #require(sections.first)
        #expect(video.first == "m=video 9 UDP/TLS/RTP/SAVPF 102")
        let order = ["a=mid:0", "a=ice-ufrag:srv1", "a=fingerprint:", "a=setup:passive", "a=sendonly", "a=rtcp-mux", "a=rtcp-rsize",
                     "a=extmap:4", "a=extmap:6", "a=rtpmap:102", "a=fmtp:102", "a=rtcp-fb:102 nack", "a=msid:", "a=ssrc:",
                     "a=candidate:1 ", "a=candidate:101 ", "a=end-of-candidates"]
        let at = order.compactMap { p in video.firstIndex { $0.hasPrefix(p) } }
        #expect(at.count == order.count && at == at.sorted(), "\(video)")
        #expect(video.last == "a=end-of-candidates")
        // The rejected section: port 0, inactive, no credentials of its own; sendrecv is not written.
        #expect(sections.last == ["m=audio 0 UDP/TLS/RTP/SAVPF 0", "c=IN IP4 0.0.0.0", "a=mid:2", "a=setup:passive", "a=inactive",
                                  "a=rtcp-mux", "a=rtpmap:0 PCMU/8000"])
        #expect(!lines.contains("a=sendrecv"))
    }

    @Test func aCameraDescriptionRoundTrips() throws {
        let d = try #require(SessionDescription(parsing: Self.camera, limits: .camera))
        #expect(d.connection == "IN IP4 0.0.0.0" && d.control == "rtsp://192.0.2.9:8554/cam/" && d.attributes == ["tool:libavformat 61.7.100"])
        #expect(d.media.map(\.control) == ["streamid=0", "streamid=1"] && d.media[0].bandwidths == ["AS:2000"])
        #expect(d.media[0].formats.first?.parameters["sprop-parameter-sets"] == "Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==")
        // Line for line what av_sdp_create wrote, but the fmtp parameters sorted by name, `;`
        // between them (one stream, one text).
        let fmtp = [
            "a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==; profile-level-id=42C01E":
                "a=fmtp:96 packetization-mode=1;profile-level-id=42C01E;sprop-parameter-sets=Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==",
            "a=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=1210":
                "a=fmtp:97 config=1210;indexdeltalength=3;indexlength=3;mode=AAC-hbr;profile-level-id=1;sizelength=13",
        ]
        #expect(Self.lines(d.text) == Self.lines(Self.camera).map { fmtp[$0] ?? $0 })
        #expect(d.text.hasSuffix("a=control:streamid=1\r\n"))
        #expect(SessionDescription(parsing: d.text, limits: .camera) == d)
        // gst-rtsp-server's answer (a stray bare LF, a static payload type with no rtpmap).
        try roundTrips(SessionDescriptionTests.camera, limits: .camera)
    }

    /// What the RTSP server says for MPEG-TS over RTP, byte for byte as it always has.
    @Test func theMPEGTSDescription() {
        var d = SessionDescription(sessionName: "cam")
        d.connection = "IN IP4 0.0.0.0"
        var m = SessionDescription.Media(kind: "video", port: 0, proto: "RTP/AVP", formats: [.init(payloadType: 33, codec: "mp2t", clockRate: 90000)])
        m.control = "streamid=0"
        d.media = [m]
        #expect(d.text == "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=cam\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 33\r\n"
            + "a=rtpmap:33 MP2T/90000\r\na=control:streamid=0\r\n")
    }

    @Test func offersAndHostileTextRoundTrip() throws {
        // Chromium's offer keeps what is not modelled (extmap-allow-mixed) as written.
        let chrome = try #require(SessionDescription(parsing: WebRTCWireTests.chromeOffer))
        #expect(chrome.attributes == ["extmap-allow-mixed"] && chrome.bundle == ["0", "1"] && chrome.origin.sessionID == 4_611_731_400_430_051_336)
        try roundTrips(WebRTCWireTests.chromeOffer, limits: .peer)
        try roundTrips(["v=0", "o=- 1 0 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE video0 audio1",
                        "m=video 9 UDP/TLS/RTP/SAVPF 102", "a=mid:video0", "a=recvonly", "a=rtpmap:102 H264/90000",
                        "m=audio 0 UDP/TLS/RTP/SAVPF 111", "a=bundle-only", "a=mid:audio1", "a=recvonly", "a=rtpmap:111 OPUS/48000",
                        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "a=sctp-port:5000"].joined(separator: "\r\n"), limits: .peer)
        try roundTrips("v=0\r\n" + String(repeating: "m=video 9 X 96 96\r\na=rtpmap:96 H264/99999999999999999999\r\na=fmtp:96 ;=;\r\na=rtcp-fb:* nack\r\n", count: 20), limits: .peer)
        try roundTrips("v=0\nm=\na=\na=:\na=rtpmap:\na=fmtp:x\na=ssrc:-1\nm=audio 99999999 Y\na=ssrc:7 cname:\na=x\n", limits: .peer)
        try roundTrips("v=0\r\no=x 99999999999999999999 1 IN IP4 h\r\ns=\r\nc=\r\na=mid:0\r\na=candidate:1 1 udp 1 h 9 typ host\r\nm=video 9 X 96\r\n", limits: .peer)
    }

    @Test func everyLineEndsWithCRLFAndNoValueEndsOne() throws {
        var d = Self.answer()
        d.sessionName = "two\r\nlines"
        d.media[0].attributes = ["x-note:a\nb"]
        let text = d.text
        #expect(text.hasPrefix("v=0\r\n"))
        let bytes = Array(text.utf8)
        #expect(bytes.last == 0x0A)
        for (i, b) in bytes.enumerated() {
            if b == 0x0D { #expect(i + 1 < bytes.count && bytes[i + 1] == 0x0A, "CR alone at \(i)") }
            if b == 0x0A { #expect(i > 0 && bytes[i - 1] == 0x0D, "LF alone at \(i)") }
        }
        let back = try #require(SessionDescription(parsing: text))
        #expect(back.sessionName == "twolines" && back.media[0].attributes == ["x-note:ab"])
        // A session with no name says "s= " (RFC 8866 §5.3), read back as none.
        let unnamed = SessionDescription(sessionName: "")
        #expect(Self.lines(unnamed.text).contains("s= "))
        #expect(SessionDescription(parsing: unnamed.text, limits: .camera) == unnamed)
    }
}
