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
    /// source's profile preferred), Opus, G.711; nothing is re-encoded.
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
                    if let f = pick(t.codecName, in: m.formats, profile: info.flatMap { ParameterSets(extradata: $0.parameters.extradata).profileIDC }) {
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
    /// preferred), its Opus or G.711 audio, received as they are.
    static func receiving(offer: SessionDescription) -> AnswerPlan {
        var sections: [Section] = []
        var took = Set<String>()
        for m in offer.media {
            var chosen: SessionDescription.Format?
            if (m.direction == "sendonly" || m.direction == "sendrecv"), m.isActive, !took.contains(m.kind) {
                switch m.kind {
                case "video": chosen = pick("h264", in: m.formats, profile: 0x42)
                case "audio": chosen = pick("opus", in: m.formats, profile: nil) ?? pick("pcm_mulaw", in: m.formats, profile: nil) ?? pick("pcm_alaw", in: m.formats, profile: nil)
                default: break
                }
            }
            if chosen != nil { took.insert(m.kind) }
            sections.append(Section(media: m, format: chosen, track: nil, ssrc: UInt32.random(in: 1...UInt32.max)))
        }
        var plan = AnswerPlan(sections: sections, sending: [:])
        plan.direction = "recvonly"
        return plan
    }

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

    func answer(ufrag: String, pwd: String, fingerprint: String, candidates: [String], port: Int, tcpPort: Int? = nil) -> String {
        let accepted = sections.filter { $0.format != nil }
        var l = ["v=0", "o=- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 127.0.0.1", "s=LiveRelay", "t=0 0", "a=ice-lite"]
        let mids = accepted.compactMap(\.media.mid)
        if !mids.isEmpty { l.append("a=group:BUNDLE " + mids.joined(separator: " ")) }
        l.append("a=msid-semantic: WMS liverelay")
        // Also at the session level: some peers (GStreamer's webrtcbin) look for them in every
        // section, rejected ones too.
        l += ["a=ice-ufrag:\(ufrag)", "a=ice-pwd:\(pwd)", "a=fingerprint:\(fingerprint)"]
        for s in sections {
            guard let f = s.format else {
                l.append("m=\(s.media.kind) 0 \(s.media.proto) \(s.media.formats.first?.payloadType ?? 0)")
                l.append("c=IN IP4 0.0.0.0")
                if let mid = s.media.mid { l.append("a=mid:\(mid)") }
                l += ["a=inactive", "a=setup:passive", "a=rtcp-mux"]
                if let f = s.media.formats.first, !f.codec.isEmpty {
                    l.append(Self.rtpmap(f))
                }
                continue
            }
            l.append("m=\(s.media.kind) 9 UDP/TLS/RTP/SAVPF \(f.payloadType)")
            l.append("c=IN IP4 0.0.0.0")
            if let mid = s.media.mid { l.append("a=mid:\(mid)") }
            l += ["a=ice-ufrag:\(ufrag)", "a=ice-pwd:\(pwd)", "a=fingerprint:\(fingerprint)", "a=setup:passive",
                  "a=\(direction)", "a=rtcp-mux", "a=rtcp-rsize"]
            l.append(Self.rtpmap(f))
            if !f.parameters.isEmpty {
                l.append("a=fmtp:\(f.payloadType) " + f.parameters.sorted { $0.key < $1.key }.map { $0.value.isEmpty ? $0.key : "\($0.key)=\($0.value)" }.joined(separator: ";"))
            }
            if let t = s.track, let id = sending[t]?.playoutDelayID {
                l.append("a=extmap:\(id) \(Self.playoutDelay)")
            }
            if s.media.kind == "video" {
                l += ["a=rtcp-fb:\(f.payloadType) nack", "a=rtcp-fb:\(f.payloadType) nack pli", "a=rtcp-fb:\(f.payloadType) ccm fir"]
            }
            if direction == "sendonly" {
                let track = "\(s.media.kind)\(s.track ?? 0)"
                l += ["a=msid:liverelay \(track)", "a=ssrc:\(s.ssrc) cname:liverelay", "a=ssrc:\(s.ssrc) msid:liverelay \(track)"]
            }
            for (i, c) in candidates.enumerated() {
                l.append("a=candidate:\(i + 1) 1 udp \(2_130_706_431 - i) \(c) \(port) typ host")
            }
            // ICE-TCP (RFC 6544 §4.5): passive host candidates, below every UDP one.
            if let tcpPort {
                for (i, c) in candidates.enumerated() {
                    l.append("a=candidate:\(i + 101) 1 tcp \(1_518_280_447 - i) \(c) \(tcpPort) typ host tcptype passive")
                }
            }
            l.append("a=end-of-candidates")
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// `a=rtpmap:111 opus/48000/2`, as the offer named the format.
    static func rtpmap(_ f: SessionDescription.Format) -> String {
        "a=rtpmap:\(f.payloadType) \(encodingName(f.codec))/\(f.clockRate)\((f.channels ?? 1) > 1 ? "/\(f.channels ?? 1)" : "")"
    }

    static func encodingName(_ codec: String) -> String {
        switch codec {
        case "h264": "H264"
        case "pcmu": "PCMU"
        case "pcma": "PCMA"
        default: codec
        }
    }
}
