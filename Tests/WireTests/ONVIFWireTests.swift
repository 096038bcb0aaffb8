import Testing
import Wire

@Suite("XML and ONVIF's SOAP, as cameras send them", .tags(.fast))
struct ONVIFWireTests {
    func tree(_ text: String) -> Result<XMLElement, XMLTreeError> { XMLTree.parse(Array(text.utf8)) }

    @Test("Elements by local name, declared prefixes or not; attributes, text, CDATA and entities")
    func localNames() throws {
        let doc = """
        <?xml version="1.0"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tt="http://www.onvif.org/ver10/schema">
        <s:Body><ptz:GetPresetsResponse><tptz:Preset token="home"><tt:Name>Home &amp; <![CDATA[<door>]]></tt:Name>
        <tt:PTZPosition><tt:PanTilt x="0.25" y="-1"/><tt:Zoom x="1"/></tt:PTZPosition></tptz:Preset></ptz:GetPresetsResponse></s:Body></s:Envelope>
        """
        let root = try tree(doc).get()
        #expect(root.name == "Envelope" && root.namespace == "http://www.w3.org/2003/05/soap-envelope")
        let answer = try ONVIFAnswer.body(Array(doc.utf8)).get()
        #expect(answer.name == "GetPresetsResponse" && answer.namespace == nil)
        let presets = ONVIFAnswer.presets(answer)
        #expect(presets == [ONVIFAnswer.Preset(token: "home", name: "Home & <door>", position: .init(pan: 0.25, tilt: -1, zoom: 1))])
    }

    @Test("Refused: a DTD (entity expansion, external entities), past the size and element caps, too deep, truncated, not XML")
    func refused() {
        let laughs = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]><l>&d;&d;&d;&d;</l>"
        guard case .failure = tree(laughs) else { Issue.record("entities taken"); return }
        let external = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>"
        if case .success(let x) = tree(external) { Issue.record("external entity taken: \(x.text.prefix(40))") }
        #expect(tree("<a>" + String(repeating: "x", count: XMLTree.defaultMaxBytes) + "</a>") == .failure(.tooLarge(limit: XMLTree.defaultMaxBytes)))
        #expect(tree("<a>" + String(repeating: "<b/>", count: XMLTree.defaultMaxElements + 1) + "</a>") == .failure(.tooManyElements(limit: XMLTree.defaultMaxElements)))
        let deep = String(repeating: "<a>", count: 5000) + String(repeating: "</a>", count: 5000)
        guard case .failure(.malformed) = tree(deep) else { Issue.record("5000 levels taken"); return }
        guard case .failure(.malformed) = tree("<a><b>") else { Issue.record("truncated taken"); return }
        guard case .failure(.malformed) = XMLTree.parse([0xFF, 0xFE, 0x00, 0x3C]) else { Issue.record("garbage taken"); return }
        guard case .failure = XMLTree.parse([]) else { Issue.record("nothing taken"); return }
        #expect(ONVIFAnswer.body(Array("<notsoap/>".utf8)) == .failure(.notEnvelope))
    }

    @Test("WS-Security's password digest (UsernameToken Profile 1.0 §3.1) and the envelope that carries it")
    func digest() throws {
        let nonce = Array(UInt8(0)..<16)
        #expect(ONVIFRequest.passwordDigest(nonce: nonce, created: "2026-11-27T22:40:09Z", password: "secret") == "FLN6CfcmjUe7qCXVNBvu1E2EYMY=")
        let bytes = ONVIFRequest.envelope(body: ONVIFRequest.setPreset(profile: "P<1>", name: "a&b\u{1}"), credentials: ("ad<min", "secret"),
                                          nonce: nonce, created: "2026-11-27T22:40:09Z")
        let root = try XMLTree.parse(bytes).get()
        let token = try #require(root.path("Header", "Security", "UsernameToken"))
        #expect(token.child("Username")?.text == "ad<min")
        #expect(token.child("Password")?.text == "FLN6CfcmjUe7qCXVNBvu1E2EYMY=")
        #expect(token.child("Nonce")?.text == Base64.encode(nonce))
        let set = try #require(root.path("Body", "SetPreset"))
        #expect(set.namespace == ONVIFRequest.ptz && set.child("ProfileToken")?.text == "P<1>" && set.child("PresetName")?.text == "a&b")
        #expect(!String(decoding: bytes, as: UTF8.self).contains("secret"))
        let move = try XMLTree.parse(ONVIFRequest.envelope(body: ONVIFRequest.continuousMove(profile: "p", pan: 0.5, tilt: -7, zoom: 0, timeoutSeconds: 2.5),
                                                           credentials: nil, nonce: [], created: "")).get()
        #expect(move.path("Body", "ContinuousMove", "Velocity", "PanTilt")?.attributes == ["x": "0.5", "y": "-1"])
        #expect(move.path("Body", "ContinuousMove", "Velocity", "Zoom") == nil)
        #expect(move.path("Body", "ContinuousMove", "Timeout")?.text == "PT2.5S")
    }

    @Test("Times both ways, without Foundation")
    func times() {
        #expect(ONVIFTime.text(unixSeconds: 1_795_819_209) == "2026-11-27T22:40:09Z")
        #expect(ONVIFTime.text(unixSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(ONVIFTime.unixSeconds(year: 2026, month: 11, day: 27, hour: 22, minute: 40, second: 9) == 1_795_819_209)
        #expect(ONVIFTime.unixSeconds(year: 2026, month: 13, day: 1, hour: 0, minute: 0, second: 0) == nil)
        #expect(ONVIFTime.unixSeconds(year: 99_999, month: 1, day: 1, hour: 0, minute: 0, second: 0) == nil)
        let answer = """
        <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><GetSystemDateAndTimeResponse><SystemDateAndTime><UTCDateTime>
        <Time><Hour>22</Hour><Minute>40</Minute><Second>9</Second></Time><Date><Year>2026</Year><Month>11</Month><Day>27</Day></Date>
        </UTCDateTime></SystemDateAndTime></GetSystemDateAndTimeResponse></s:Body></s:Envelope>
        """
        #expect((try? ONVIFAnswer.body(Array(answer.utf8)).get()).flatMap(ONVIFAnswer.systemTime) == 1_795_819_209)
    }

    @Test("Profiles, stream URIs, faults: checked values, refusals told apart")
    func answers() throws {
        let profiles = """
        <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><trt:GetProfilesResponse xmlns:trt="http://www.onvif.org/ver10/media/wsdl">
        <trt:Profiles token="main"><Name>Main</Name><VideoEncoderConfiguration><Encoding>H265</Encoding><Resolution><Width>1920</Width><Height>1080</Height></Resolution>
        <RateControl><FrameRateLimit>25</FrameRateLimit></RateControl></VideoEncoderConfiguration><PTZConfiguration token="p"/></trt:Profiles>
        <trt:Profiles token="sub"><Name>Sub</Name><VideoEncoderConfiguration><Resolution><Width>99999999999999999999</Width><Height>-5</Height></Resolution></VideoEncoderConfiguration></trt:Profiles>
        <trt:Profiles><Name>no token</Name></trt:Profiles><trt:Profiles token="two words"/><trt:Profiles token="é"/></trt:GetProfilesResponse></s:Body></s:Envelope>
        """
        let list = ONVIFAnswer.profiles(try ONVIFAnswer.body(Array(profiles.utf8)).get())
        #expect(list == [.init(token: "main", name: "Main", encoding: "H265", width: 1920, height: 1080, fps: 25, ptz: true),
                         .init(token: "sub", name: "Sub")])
        let uri = #"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><R><MediaUri><Uri> rtsp://10.0.0.5/live </Uri></MediaUri></R></s:Body></s:Envelope>"#
        #expect(ONVIFAnswer.mediaURI(try ONVIFAnswer.body(Array(uri.utf8)).get()) == "rtsp://10.0.0.5/live")
        func answer(_ uri: String) throws -> XMLElement {
            try ONVIFAnswer.body(Array(#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><R><MediaUri><Uri>\#(uri)</Uri></MediaUri></R></s:Body></s:Envelope>"#.utf8)).get()
        }
        // Only rtsp(s) is a stream, without the camera's own credentials; only http(s) without them a snapshot.
        #expect(ONVIFAnswer.streamURI(try answer("rtsp://cam:pw@10.0.0.5:554/live?a=1"))?.withoutCredentials == "rtsp://10.0.0.5:554/live?a=1")
        for uri in ["file:///etc/passwd", "pipe:0", "http://169.254.169.254/latest", "concat:a|b", "srt://10.0.0.5:9000"] {
            #expect(ONVIFAnswer.streamURI(try answer(uri)) == nil, "\(uri)")
        }
        #expect(ONVIFAnswer.snapshotURI(try answer("http://10.0.0.5/snap.jpg")) == "http://10.0.0.5/snap.jpg")
        #expect(ONVIFAnswer.snapshotURI(try answer("http://u:p@10.0.0.5/snap.jpg")) == nil)
        #expect(ONVIFAnswer.snapshotURI(try answer("file:///etc/passwd")) == nil)
        let spaced = #"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><R><MediaUri><Uri>rtsp://a b/</Uri></MediaUri></R></s:Body></s:Envelope>"#
        #expect(ONVIFAnswer.mediaURI(try ONVIFAnswer.body(Array(spaced.utf8)).get()) == nil)
        let fault = """
        <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:ter="http://www.onvif.org/ver10/error"><s:Body><s:Fault>
        <s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value>ter:NotAuthorized</s:Value></s:Subcode></s:Code>
        <s:Reason><s:Text xml:lang="en">Sender not authorizéd</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>
        """
        #expect(ONVIFAnswer.body(Array(fault.utf8)) == .failure(.fault(reason: "Sender not authoriz?d", notAuthorized: true)))
    }

    @Test("onvif:// URLs: credentials, ports, profiles; services kept on the camera's host")
    func urls() throws {
        let u = try #require(ONVIFURL("onvif://ad%40min:p%3Ass@cam.local/Profile%20Main"))
        #expect(u.user == "ad@min" && u.password == "p:ss" && u.port == 80 && u.authority == "cam.local" && u.profile == "Profile Main")
        #expect(u.deviceService == "http://cam.local/onvif/device_service")
        #expect(u.sameHost("http://192.168.1.9:8000/onvif/ptz_service") == "http://cam.local/onvif/ptz_service")
        #expect(u.sameHost("ftp://x/") == nil)
        let v6 = try #require(ONVIFURL("onvif://[fe80::1]:8080"))
        #expect(v6.port == 8080 && v6.authority == "[fe80::1]:8080" && v6.profile == nil)
        #expect(ONVIFURL("onvif://[fe80::1]")?.authority == "[fe80::1]")
        #expect(ONVIFURL("rtsp://cam/") == nil && ONVIFURL("onvif://cam:99999/") == nil && ONVIFURL("onvif://") == nil)
        #expect(RTSPURL("rtsp://10.0.0.5:554/live?x=1")?.with(user: "a b", password: "p@ss") == "rtsp://a%20b:p%40ss@10.0.0.5:554/live?x=1")
    }

    @Test("WS-Discovery: only matches that answer this probe, with http addresses; scopes decoded")
    func discovery() throws {
        let probe = try XMLTree.parse(WSDiscovery.probe(messageID: "urn:uuid:1")).get()
        #expect(probe.path("Body", "Probe", "Types")?.text == "dn:NetworkVideoTransmitter")
        func match(_ relates: String, _ xaddrs: String, wrapped: Bool = true) -> [UInt8] {
            let m = "<d:ProbeMatch><a:EndpointReference><a:Address>urn:uuid:cam</a:Address></a:EndpointReference><d:Scopes>onvif://www.onvif.org/name/Gate%203 onvif://www.onvif.org/hardware/X1</d:Scopes><d:XAddrs>\(xaddrs)</d:XAddrs></d:ProbeMatch>"
            return Array("""
            <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery">\
            <s:Header><a:RelatesTo>\(relates)</a:RelatesTo></s:Header><s:Body>\(wrapped ? "<d:ProbeMatches>\(m)</d:ProbeMatches>" : m)</s:Body></s:Envelope>
            """.utf8)
        }
        let found = WSDiscovery.matches(match("urn:uuid:1", "http://10.0.0.5/onvif/device_service file:///etc/passwd"), answering: "urn:uuid:1")
        #expect(found.map(\.addresses) == [["http://10.0.0.5/onvif/device_service"]])
        #expect(found.first?.name == "Gate 3" && found.first?.hardware == "X1" && found.first?.endpoint == "urn:uuid:cam")
        #expect(WSDiscovery.matches(match("urn:uuid:1", "http://10.0.0.5/", wrapped: false), answering: "urn:uuid:1").count == 1)
        #expect(WSDiscovery.matches(match("urn:uuid:2", "http://10.0.0.5/"), answering: "urn:uuid:1").isEmpty)
        #expect(WSDiscovery.matches(match("urn:uuid:1", "gopher://x"), answering: "urn:uuid:1").isEmpty)
    }
}
