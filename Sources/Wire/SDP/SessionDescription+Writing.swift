/// The one SDP writer: WebRTC answers (WHEP, WHIP), the bench's WHEP offers, and the RTSP
/// server's DESCRIBE answers (per-track RTP and MPEG-TS) are all written here.
extension SessionDescription {
    /// The text, every line ended by CRLF, in RFC 8866's order: `v=`, `o=`, `s=`, `c=`, `t=`,
    /// the session's attributes, then each media section: `m=`, `c=`, `b=`, `a=mid`, ICE and
    /// DTLS, direction (unless `sendrecv`, the default), `rtcp-mux`, `rtcp-rsize`, `extmap`,
    /// per format `rtpmap`, `fmtp` (parameters sorted by name) and `rtcp-fb`, `msid`, `ssrc`,
    /// the section's other attributes, candidates, `end-of-candidates`, `control` last.
    /// A CR or LF inside a value is left out: no value ends its line early.
    public var text: String {
        var w = SDPLineWriter()
        w.line("v=0")
        w.line("o=\(origin.username) \(origin.sessionID) \(origin.sessionVersion) IN \(origin.addressType) \(origin.address)")
        // "s= " is what RFC 8866 §5.3 asks of a session with no name.
        w.line("s=" + (sessionName.isEmpty ? " " : sessionName))
        if let connection { w.line("c=" + connection) }
        w.line("t=0 0")
        if iceLite { w.attribute("ice-lite") }
        if !bundle.isEmpty { w.attribute("group:BUNDLE " + bundle.joined(separator: " ")) }
        for a in attributes { w.attribute(a) }
        w.security(ufrag: iceUfrag, pwd: icePwd, fingerprint: fingerprint, setup: setup)
        if let control { w.attribute("control:" + control) }
        for m in media { w.media(m) }
        return w.text
    }

    /// An encoding name as `a=rtpmap` writes it: the IANA registry's case (`H264`,
    /// `MPEG4-GENERIC`, `opus`, `rtx`); receivers compare without case, the registry's is what
    /// each one has been seen to read.
    static func encodingName(_ codec: String) -> String {
        let name = Substring(codec).lowercasedASCII()
        switch name {
        case "opus", "rtx", "red", "ulpfec", "flexfec-03", "telephone-event", "speex", "vorbis", "theora", "raw": return name
        case "ilbc": return "iLBC"
        default: return codec.uppercasedASCII()
        }
    }
}

extension SessionDescription.Candidate {
    /// `candidate:1 1 udp 2130706431 192.0.2.1 40000 typ host`, as after `a=`.
    var attributeValue: String {
        var s = "candidate:\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(type)"
        if let tcpType { s += " tcptype " + tcpType }
        return s
    }
}

/// Lines of SDP text, each ended by CRLF.
struct SDPLineWriter {
    private(set) var text = ""

    mutating func line(_ s: String) {
        if s.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            text += String(decoding: s.utf8.filter { $0 != 0x0D && $0 != 0x0A && $0 != 0 }, as: UTF8.self)
        } else {
            text += s
        }
        text += "\r\n"
    }

    mutating func attribute(_ a: String) { line("a=" + a) }

    mutating func security(ufrag: String?, pwd: String?, fingerprint: String?, setup: String?) {
        if let ufrag { attribute("ice-ufrag:" + ufrag) }
        if let pwd { attribute("ice-pwd:" + pwd) }
        if let fingerprint { attribute("fingerprint:" + fingerprint) }
        if let setup { attribute("setup:" + setup) }
    }

    mutating func media(_ m: SessionDescription.Media) {
        var head = "m=\(m.kind) \(m.port) \(m.proto)"
        for f in m.formats { head += " \(f.payloadType)" }
        line(head)
        if let c = m.connection { line("c=" + c) }
        for b in m.bandwidths { line("b=" + b) }
        if let mid = m.mid { attribute("mid:" + mid) }
        if m.bundleOnly { attribute("bundle-only") }
        security(ufrag: m.iceUfrag, pwd: m.icePwd, fingerprint: m.fingerprint, setup: m.setup)
        if m.direction != "sendrecv" { attribute(m.direction) }
        if m.rtcpMux { attribute("rtcp-mux") }
        if m.rtcpReducedSize { attribute("rtcp-rsize") }
        for (uri, id) in m.extensions.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
            attribute("extmap:\(id) \(uri)")
        }
        for f in m.formats { format(f) }
        if let msid = m.msid { attribute("msid:" + msid) }
        for ssrc in m.ssrcs {
            if let cname = m.cname { attribute("ssrc:\(ssrc) cname:" + cname) }
            if let msid = m.msid { attribute("ssrc:\(ssrc) msid:" + msid) }
            if m.cname == nil && m.msid == nil { attribute("ssrc:\(ssrc)") }
        }
        for a in m.attributes { attribute(a) }
        for c in m.candidates { attribute(c.attributeValue) }
        if m.endOfCandidates { attribute("end-of-candidates") }
        if let control = m.control { attribute("control:" + control) }
    }

    /// `rtpmap` (when the format has a name: a static payload type may have none), `fmtp`
    /// (parameters sorted, so one stream is described by one text), `rtcp-fb`.
    mutating func format(_ f: SessionDescription.Format) {
        if !f.codec.isEmpty {
            var map = "rtpmap:\(f.payloadType) \(SessionDescription.encodingName(f.codec))/\(f.clockRate)"
            if let channels = f.channels { map += "/\(channels)" }
            attribute(map)
        }
        if !f.parameters.isEmpty {
            let params = f.parameters.sorted { $0.key < $1.key }.map { $0.value.isEmpty ? $0.key : $0.key + "=" + $0.value }
            attribute("fmtp:\(f.payloadType) " + params.joined(separator: ";"))
        }
        for fb in f.feedback { attribute("rtcp-fb:\(f.payloadType) \(fb)") }
    }
}
