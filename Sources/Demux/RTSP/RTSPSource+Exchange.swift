internal import CFFmpeg
import MediaCore
import Wire
import Logging
import Foundation
import Glibc

/// The RTSP exchange of `RTSPSource`: OPTIONS, DESCRIBE, a SETUP per track, PLAY, and the
/// requests and answers on the control connection.
extension RTSPSource {
    func fail(_ e: WireError, stage: String, deadline: Double) -> IngestError {
        switch e {
        case .unreachable(let m): return IngestError(.unreachable, source: url, stage: stage, detail: m)
        case .timedOut: return IngestError(.timedOut, source: url, stage: stage, detail: "no answer within \(formatSeconds(deadline))")
        case .stopped: return IngestError(.stopped, source: url, stage: stage, detail: "stopped")
        case .closed: return IngestError(.failed, source: url, stage: stage, detail: "the server closed the connection")
        case .status(let code, let reason):
            let detail = code == 401 ? (address.user == nil ? "the server wants credentials (401 \(reason))" : "credentials refused (401 \(reason))")
                                     : "server answered \(code) \(reason)"
            let kind: IngestError.Kind = code == 401 || code == 403 ? .unauthorized : (400..<500).contains(code) ? .refused : .failed
            return IngestError(kind, source: url, stage: stage, detail: detail)
        case .invalid(let m): return IngestError(.invalidData, source: url, stage: stage, detail: m)
        case .failed(let m): return IngestError(.failed, source: url, stage: stage, detail: m)
        case .unsupported(let m): return IngestError(.failed, source: url, stage: stage, detail: "not supported: " + m)
        }
    }

    func seconds(until deadline: UInt64) -> Double {
        max(0, Double(Int64(bitPattern: deadline &- MonotonicClock.nanoseconds())) / 1e9)
    }

    /// The RTSP exchange over one transport, then the probe: all before `end`.
    func start(_ transport: SourceOptions.Transport, until end: UInt64, probeShare: Double) throws {
        transportUsed = transport
        let total = seconds(until: end)
        let described: [SDPTrack]
        do throws(WireError) {
            let d = try describe(until: end)
            guard d.status == 200 else { throw WireError.status(d.status, d.reason) }
            let base = d.header("content-base") ?? d.header("content-location") ?? address.withoutCredentials
            let sdp = SessionDescription(parsing: String(decoding: d.body, as: UTF8.self), limits: .camera) ?? SessionDescription.empty
            var media = sdp.media.map(SDPTrack.init)
            // ONVIF writes directions as the client sees them: the backchannel is the audio
            // section the client sends (`sendonly`). A camera that writes its own view (video
            // `sendonly`) has none.
            var back: SDPTrack?
            if askBackchannel, !media.contains(where: { $0.kind == "video" && $0.direction == "sendonly" }),
               let i = media.firstIndex(where: { $0.kind == "audio" && $0.direction == "sendonly" }) {
                back = media.remove(at: i)
            }
            // A camera that took the requirement but has no backchannel is read as any camera.
            if back == nil { askBackchannel = false }
            described = media
            try makeTracks(described, base: base, transport: transport, until: end)
            if let back { try setupBackchannel(back, base: base, transport: transport, until: end) }
            playURL = SessionDescription.resolve(control: sdp.control, base: base)
            // An ONVIF camera takes `npt=0.000-` as a seek, which its live media cannot (503):
            // with the backchannel, PLAY names no range.
            let p = try request("PLAY", url: playURL, headers: askBackchannel ? requireHeaders : ["Range: npt=0.000-"], until: end)
            guard p.status == 200 else { throw WireError.status(p.status, p.reason) }
        } catch {
            if case .unsupported(let reason) = error { throw Unsupported(reason: reason, connection: link) }
            throw fail(error, stage: "opening", deadline: total)
        }
        let now = MonotonicClock.nanoseconds()
        nextKeepalive = now &+ keepaliveInterval
        nextReport = now
        sendReports()
        polls = [pollfd(fd: link!.fd, events: Int16(POLLIN), revents: 0)]
        for u in udp {
            polls.append(pollfd(fd: u.rtp, events: Int16(POLLIN), revents: 0))
            polls.append(pollfd(fd: u.rtcp, events: Int16(POLLIN), revents: 0))
        }
        let probeEnd = now &+ UInt64(saturating: Double(end &- min(end, now)) * probeShare)
        try probe(described, until: probeEnd, deadline: seconds(until: probeEnd))
    }

    /// One track per H.264 or H.265 video, AAC or G.711 audio section (others are left out: ONVIF
    /// metadata); SETUP for each.
    func makeTracks(_ media: [SDPTrack], base: String, transport: SourceOptions.Transport, until end: UInt64) throws(WireError) {
        let queue = transport == .udp ? (options.reorderQueueSize ?? 500) : 0
        let wait = options.reorderWait ?? 0.1
        var chosen: [(SDPTrack, RTPDepayloadFormat)] = []
        for m in media {
            switch (m.kind, m.encoding) {
            case ("video", "H264"):
                if let mode = m.fmtp["packetization-mode"], mode == "2" { throw unsupported("H.264 in interleaved packetization mode") }
                chosen.append((m, .h264))
            case ("video", "H265"):
                chosen.append((m, .h265(donl: m.h265UsesDONL)))
            case ("audio", "MPEG4-GENERIC"):
                guard let s = m.fmtp["sizelength"].flatMap(Int.init), (1...16).contains(s), m.fmtp["config"] != nil else { throw unsupported("mpeg4-generic audio without AU headers") }
                chosen.append((m, .aac(sizeLength: s, indexLength: m.fmtp["indexlength"].flatMap(Int.init) ?? 0, indexDeltaLength: m.fmtp["indexdeltalength"].flatMap(Int.init) ?? 0)))
            case ("audio", "PCMU"), ("audio", "PCMA"):
                chosen.append((m, .g711))
            case ("video", _), ("audio", _):
                throw unsupported("\(m.kind) encoded as \(m.encoding.isEmpty ? "payload type \(m.payloadType)" : m.encoding)")
            default:
                continue
            }
        }
        guard chosen.contains(where: { $0.0.kind == "video" }) else { throw unsupported("no H.264 or H.265 video") }
        // Interleaved channels are one byte: two per track.
        guard chosen.count <= 16 else { throw .invalid("\(chosen.count) media sections (at most 16 are taken)") }
        for (i, (m, format)) in chosen.enumerated() {
            guard (1...10_000_000).contains(m.clockRate), (0...127).contains(m.payloadType) else { throw unsupported("\(m.kind) with no usable clock rate") }
            tracks.append(RTPTrack(streamIndex: i, format: format, payloadType: m.payloadType, clockRate: m.clockRate, queueSize: queue, maxDelay: wait))
            kinds.append(m.kind == "video" ? .video : .audio)
            timeBases.append(TimeBase(1, Int32(clamping: m.clockRate)))
            var spec: String
            if transport == .tcp {
                spec = "RTP/AVP/TCP;unicast;interleaved=\(2 * i)-\(2 * i + 1)"
            } else {
                let pair = try UDPPair(family: link!.peer.ss_family)
                udp.append(pair)
                spec = "RTP/AVP;unicast;client_port=\(pair.port)-\(pair.port + 1)"
            }
            let r = try request("SETUP", url: SessionDescription.resolve(control: m.control, base: base), headers: ["Transport: " + spec] + requireHeaders, until: end)
            guard r.status == 200 else {
                if r.status == 461 && transport == .udp { throw WireError.status(461, "Unsupported Transport (UDP)") }
                throw WireError.status(r.status, r.reason)
            }
            if session == nil, let value = r.header("session") {
                guard let header = RTSPSessionHeader(parsing: value) else { throw WireError.invalid("SETUP answered with an empty Session header") }
                session = header.id
                if let bad = header.unusableTimeout {
                    logger.warning("the camera's Session timeout is not usable; keep-alive every 30 s", metadata: ["source": "\(redactedURL)", "timeout": "\(bad)"])
                }
                // Keep alive at half the server's timeout; a timeout beyond two minutes (or none
                // usable: `timeout=1e20`, `inf`) keeps the default interval.
                if let t = header.timeout, t >= 2 { keepaliveInterval = min(keepaliveInterval, UInt64(t) * 500_000_000) }
            }
            let reply = r.header("transport").flatMap { RTSPTransportSpec(parsing: $0) }
            if transport == .tcp {
                // A server that names no channels uses the ones offered.
                let pair = reply?.interleaved ?? .init(rtp: UInt8(truncatingIfNeeded: 2 * i), rtcp: UInt8(truncatingIfNeeded: 2 * i + 1))
                channels[pair.rtp] = (i, false)
                channels[pair.rtcp] = (i, true)
            } else {
                if let sp = reply?.serverPort { udp[i].serverRTCP = sp.rtcp }
                if let s = reply?.source { serverSource = s }
            }
        }
    }

    func unsupported(_ reason: String) -> WireError { .unsupported(reason) }

    /// The backchannel's requirement, on SETUP and PLAY once the camera took it with DESCRIBE.
    var requireHeaders: [String] { askBackchannel ? [Self.backchannelRequire] : [] }

    /// SETUP of the camera's backchannel, after the tracks read (their SETUP made the session):
    /// interleaved on the next free channels over TCP, else a UDP pair of its own. One the talk
    /// path cannot encode, or that the camera refuses, is said and left: the stream is read.
    func setupBackchannel(_ m: SDPTrack, base: String, transport: SourceOptions.Transport, until end: UInt64) throws(WireError) {
        guard let format = m.talkFormat else {
            logger.info("the camera's backchannel is in a format LiveRelay cannot send", metadata: ["source": "\(redactedURL)", "encoding": "\(m.encoding)/\(m.clockRate)"])
            return
        }
        guard let link else { throw .closed }
        let i = tracks.count
        var pair: UDPPair?
        let spec: String
        if transport == .tcp {
            spec = "RTP/AVP/TCP;unicast;interleaved=\(2 * i)-\(2 * i + 1)"
        } else {
            let p = try UDPPair(family: link.peer.ss_family)
            pair = p
            spec = "RTP/AVP;unicast;client_port=\(p.port)-\(p.port + 1)"
        }
        let r = try request("SETUP", url: SessionDescription.resolve(control: m.control, base: base), headers: ["Transport: " + spec] + requireHeaders, until: end)
        let reply = r.header("transport").flatMap { RTSPTransportSpec(parsing: $0) }
        let path: Backchannel.Path?
        if transport == .tcp {
            path = r.status == 200 ? .interleaved(link, channel: reply?.interleaved?.rtp ?? UInt8(truncatingIfNeeded: 2 * i)) : nil
        } else if r.status == 200, let p = pair, let port = reply?.serverPort?.rtp, port > 0 {
            path = .udp(fd: p.rtp, to: Backchannel.address(link.peer, port: port))
        } else {
            path = nil
        }
        guard let path else {
            if let p = pair { close(p.rtp); close(p.rtcp) }
            logger.notice("the camera refused its backchannel's SETUP", metadata: ["source": "\(redactedURL)", "status": "\(r.status)"])
            return
        }
        backchannelPair = pair
        backchannel = Backchannel(format: format, path: path)
        logger.info("camera backchannel set up", metadata: ["source": "\(redactedURL)", "format": "\(format)", "over": "\(transport.rawValue)"])
    }

    // MARK: - Requests

    func requestBytes(_ method: String, url: String, headers: [String]) -> [UInt8] {
        cseq += 1
        var s = "\(method) \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: LiveRelay\r\n"
        if var a = auth, let h = a.header(method: method, uri: url) { auth = a; s += "Authorization: \(h)\r\n" }
        if let session { s += "Session: \(session)\r\n" }
        for h in headers { s += h + "\r\n" }
        return Array((s + "\r\n").utf8)
    }

    /// Sends a request and waits for its answer (media arriving meanwhile is taken); answers a
    /// 401 once with the URL's credentials.
    func request(_ method: String, url: String, headers: [String], until end: UInt64) throws(WireError) -> RTSPResponse {
        var answered = false
        while true {
            guard let link else { throw .closed }
            try link.send(requestBytes(method, url: url, headers: headers), deadline: end, interrupt: interruptHandle)
            let want = cseq
            let r = try response(to: want, until: end)
            if r.status == 401, !answered, let user = address.user {
                answered = true
                var a = RTSPClientCredentials(user: user, password: address.password ?? "")
                if a.take(challenges: r.headers("www-authenticate")) { auth = a; continue }
            }
            return r
        }
    }

    func response(to cseq: Int, until end: UInt64) throws(WireError) -> RTSPResponse {
        guard let link else { throw .closed }
        while true {
            while let frame = try link.input.nextFrame() {
                switch frame {
                case .response(let r):
                    if r.header("cseq").flatMap({ PeerNumber.integer($0, in: 0...Int.max) }) == cseq { return r }
                case .interleaved(let channel, let payload):
                    take(channel: channel, payload)
                case .request:
                    break   // the client's framer gives none (a server's requests are skipped)
                }
            }
            if link.isClosed { throw .closed }
            try link.fill(deadline: end, interrupt: interruptHandle)
        }
    }
}
