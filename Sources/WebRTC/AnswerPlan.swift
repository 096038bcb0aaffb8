import MediaCore
import Mux
import Wire

/// What the answer to an offer says: for each media section of the offer, the stream's track
/// sent in it (with the payload type the offer chose) or a rejection; and the answer's text.
struct AnswerPlan {
    struct Section {
        let media: SessionDescription.Media
        /// The accepted format and the feed's track it carries; nil when rejected.
        let format: SessionDescription.Format?
        let track: Int?
        let ssrc: UInt32
        /// This section's direction in the answer when it is not the plan's (WHIP: `sendrecv`
        /// for a publisher's Opus that also receives, its talk path).
        var direction: String? = nil
    }

    let sections: [Section]
    /// Feed track → how it is sent.
    let sending: [Int: WebRTCSession.Sending]
    /// `sendonly` (WHEP: LiveRelay sends) or `recvonly` (WHIP: LiveRelay receives).
    var direction = "sendonly"

    var summary: String {
        sections.map { s in s.format.map { "\(s.media.kind) \($0.codec)/\($0.payloadType)" } ?? "\(s.media.kind) rejected" }.joined(separator: ", ")
    }

    /// Matches the stream's tracks to the offer's sections: H.264 (packetization mode 1, the
    /// source's profile preferred), H.265 (answered with the source's profile, tier and level),
    /// Opus, G.711; nothing is re-encoded.
    static func make(offer: SessionDescription, tracks: [RTPPacketizer.Track], streams: [StreamInfo]) -> AnswerPlan {
        var used = Set<Int>()
        var sections: [Section] = []
        var sending: [Int: WebRTCSession.Sending] = [:]
        for m in offer.media {
            let ssrc = UInt32.random(in: 1...UInt32.max)
            var chosen: (SessionDescription.Format, Int)?
            if m.direction == "recvonly" || m.direction == "sendrecv", m.isActive {
                for (i, t) in tracks.enumerated() where !used.contains(i) && t.mediaType.rawValue == m.kind {
                    let info = streams.first { $0.index == t.sourceIndex }
                    if var f = pick(t.codecName, in: m.formats, profile: info.flatMap { ParameterSets(extradata: $0.parameters.extradata).profileIDC }) {
                        // H.265: what is sent, not what the offer listed (its sprop sets are the offerer's).
                        if t.codecName == "hevc" {
                            let sps = info.flatMap { ParameterSets(extradata: $0.parameters.extradata, syntax: .h265).sps.first }
                            f.parameters = sps.flatMap(H265.ProfileTierLevel.init(sps:))?.sdpParameters ?? ["tx-mode": "SRST"]
                        }
                        chosen = (f, i)
                        break
                    }
                }
            }
            if let (f, i) = chosen {
                used.insert(i)
                // Chromium's playout-delay extension, at 0: pictures are shown as they arrive,
                // not held in a jitter buffer sized for calls.
                let delay = m.kind == "video" ? m.extensions[Self.playoutDelay].flatMap { (1...14).contains($0) ? UInt8($0) : nil } : nil
                sending[i] = WebRTCSession.Sending(payloadType: UInt8(f.payloadType & 0x7F), ssrc: ssrc, playoutDelayID: delay)
                sections.append(Section(media: m, format: f, track: i, ssrc: ssrc))
            } else {
                sections.append(Section(media: m, format: nil, track: nil, ssrc: ssrc))
            }
        }
        return AnswerPlan(sections: sections, sending: sending)
    }

    /// A publisher's offer (WHIP): its H.264 video (packetization mode 1, constrained baseline
    /// preferred) or else its H.265, its Opus or G.711 audio, received as they are.
    static func receiving(offer: SessionDescription) -> AnswerPlan {
        var sections: [Section] = []
        var took = Set<String>()
        for m in offer.media {
            var chosen: SessionDescription.Format?
            if (m.direction == "sendonly" || m.direction == "sendrecv"), m.isActive, !took.contains(m.kind) {
                switch m.kind {
                case "video": chosen = pick("h264", in: m.formats, profile: 0x42) ?? pick("hevc", in: m.formats, profile: nil)
                case "audio": chosen = pick("opus", in: m.formats, profile: nil) ?? pick("pcm_mulaw", in: m.formats, profile: nil) ?? pick("pcm_alaw", in: m.formats, profile: nil)
                default: break
                }
            }
            if chosen != nil { took.insert(m.kind) }
            // A field unit that listens: its Opus section, offered sendrecv, carries the
            // operators' voice back (talk).
            let listens = m.kind == "audio" && m.direction == "sendrecv" && chosen?.codec == "opus"
            sections.append(Section(media: m, format: chosen, track: nil, ssrc: UInt32.random(in: 1...UInt32.max), direction: listens ? "sendrecv" : nil))
        }
        var plan = AnswerPlan(sections: sections, sending: [:])
        plan.direction = "recvonly"
        return plan
    }

    /// A talker's offer (push-to-talk): its first audio section that sends Opus; nothing else.
    static func talking(offer: SessionDescription) -> AnswerPlan {
        var took = false
        let sections = offer.media.map { m -> Section in
            var chosen: SessionDescription.Format?
            if !took, m.kind == "audio", m.direction == "sendonly" || m.direction == "sendrecv", m.isActive {
                chosen = pick("opus", in: m.formats, profile: nil)
                took = chosen != nil
            }
            return Section(media: m, format: chosen, track: nil, ssrc: UInt32.random(in: 1...UInt32.max))
        }
        var plan = AnswerPlan(sections: sections, sending: [:])
        plan.direction = "recvonly"
        return plan
    }

    /// WHIP: the section that carries talk back to the publisher (its Opus, answered sendrecv).
    var talkSection: Section? { sections.first { $0.direction == "sendrecv" && $0.format != nil } }

    /// The accepted sections as `RTPPushSource` takes them: one payload format each.
    var receivedSections: [SessionDescription.Media] {
        sections.compactMap { s in s.format.map { SessionDescription.Media(kind: s.media.kind, formats: [$0]) } }
    }

    static let playoutDelay = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"

    static func pick(_ codec: String, in formats: [SessionDescription.Format], profile: UInt8?) -> SessionDescription.Format? {
        switch codec {
        case "h264":
            let mode1 = formats.filter { $0.codec == "h264" && $0.parameters["packetization-mode"] == "1" }
            if let p = profile, let f = mode1.first(where: { Self.offeredProfile($0) == p }) { return f }
            return mode1.first(where: { Self.offeredProfile($0) == 0x42 }) ?? mode1.first
        // RFC 7798: one RTP stream (`tx-mode` SRST, the default); MRST/MRMT are not taken.
        case "hevc": return formats.first { $0.codec == "h265" && $0.clockRate == 90000 && ($0.parameters["tx-mode"] ?? "SRST").uppercasedASCII() == "SRST" }
        case "opus": return formats.first { $0.codec == "opus" && $0.clockRate == 48000 }
        case "pcm_mulaw": return formats.first { $0.codec == "pcmu" && $0.clockRate == 8000 }
        case "pcm_alaw": return formats.first { $0.codec == "pcma" && $0.clockRate == 8000 }
        default: return nil
        }
    }

    /// profile_idc of `profile-level-id` (`42e01f` → 0x42).
    static func offeredProfile(_ f: SessionDescription.Format) -> UInt8? {
        guard let p = f.parameters["profile-level-id"], p.utf8.count == 6 else { return nil }
        return UInt8(p.prefix(2), radix: 16)
    }

    /// The answer's text, written by Wire's one SDP writer.
    func answer(ufrag: String, pwd: String, fingerprint: String, candidates: [String], port: Int, tcpPort: Int? = nil) -> String {
        answerDescription(ufrag: ufrag, pwd: pwd, fingerprint: fingerprint, candidates: candidates, port: port, tcpPort: tcpPort).text
    }

    /// The answer: ICE-lite, DTLS passive, one bundle of the accepted sections, each with the
    /// host candidates (UDP on `port`, and ICE-TCP on `tcpPort`); a rejected section keeps its
    /// mid, port 0 and `a=inactive`.
    func answerDescription(ufrag: String, pwd: String, fingerprint: String, candidates: [String], port: Int, tcpPort: Int? = nil) -> SessionDescription {
        var d = SessionDescription(origin: .init(sessionID: UInt64(UInt32.random(in: 1...UInt32.max)), sessionVersion: 1), sessionName: "LiveRelay")
        d.iceLite = true
        d.bundle = sections.filter { $0.format != nil }.compactMap(\.media.mid)
        d.attributes = ["msid-semantic: WMS liverelay"]
        // Also at the session level: some peers (GStreamer's webrtcbin) look for them in every
        // section, rejected ones too.
        d.iceUfrag = ufrag
        d.icePwd = pwd
        d.fingerprint = fingerprint
        var ice: [SessionDescription.Candidate] = []
        for (i, c) in candidates.enumerated() {
            ice.append(.init(foundation: "\(i + 1)", transport: "udp", priority: UInt32(clamping: 2_130_706_431 - i), address: c, port: port, type: "host"))
        }
        // ICE-TCP (RFC 6544 §4.5): passive host candidates, below every UDP one.
        if let tcpPort {
            for (i, c) in candidates.enumerated() {
                ice.append(.init(foundation: "\(i + 101)", transport: "tcp", priority: UInt32(clamping: 1_518_280_447 - i), address: c,
                                 port: tcpPort, type: "host", tcpType: "passive"))
            }
        }
        for s in sections {
            guard let f = s.format else {
                // The offer's first format named again, nothing more (a section with none says 0).
                let offered = s.media.formats.first ?? SessionDescription.Format(payloadType: 0, codec: "", clockRate: 0)
                var m = SessionDescription.Media(kind: s.media.kind, port: 0, proto: s.media.proto, formats: [Self.named(offered)])
                m.connection = "IN IP4 0.0.0.0"
                m.mid = s.media.mid
                m.setup = "passive"
                m.direction = "inactive"
                m.rtcpMux = true
                d.media.append(m)
                continue
            }
            var format = Self.named(f)
            format.parameters = f.parameters
            if s.media.kind == "video" { format.feedback = ["nack", "nack pli", "ccm fir"] }
            var m = SessionDescription.Media(kind: s.media.kind, port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: [format])
            m.connection = "IN IP4 0.0.0.0"
            m.mid = s.media.mid
            m.iceUfrag = ufrag
            m.icePwd = pwd
            m.fingerprint = fingerprint
            m.setup = "passive"
            m.direction = s.direction ?? direction
            m.rtcpMux = true
            m.rtcpReducedSize = true
            if let t = s.track, let id = sending[t]?.playoutDelayID {
                m.extensions[Self.playoutDelay] = Int(id)
            }
            if m.direction == "sendonly" || m.direction == "sendrecv" {
                m.msid = "liverelay \(s.media.kind)\(s.track ?? 0)"
                m.ssrcs = [s.ssrc]
                m.cname = "liverelay"
            }
            m.candidates = ice
            m.endOfCandidates = true
            d.media.append(m)
        }
        return d
    }

    /// A format as the offer named it (payload type, encoding, clock rate; channels when more
    /// than one), without its parameters or feedback.
    static func named(_ f: SessionDescription.Format) -> SessionDescription.Format {
        SessionDescription.Format(payloadType: f.payloadType, codec: f.codec, clockRate: f.clockRate, channels: (f.channels ?? 1) > 1 ? f.channels : nil)
    }
}
