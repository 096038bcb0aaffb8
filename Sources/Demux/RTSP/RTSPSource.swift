internal import CFFmpeg
public import MediaCore
public import Logging
import Foundation
import Glibc
import Synchronization

/// An RTSP source as the engine sees it: which lower transport it ended up on (`auto` resolves
/// to `udp` or `tcp`), for `TransportMemory` and the probe command.
public protocol RTSPTransportReporting: PacketSource {
    var transportUsed: SourceOptions.Transport? { get }
    var redactedURL: String { get }
}

extension IngestSession: RTSPTransportReporting {}

/// LiveRelay's own RTSP client (RFC 2326) for H.264 cameras, with AAC or G.711 audio: the RTSP
/// exchange, RTP over UDP or interleaved in the TCP connection, put back in order within a
/// bounded wait, and pictures rebuilt from RTP (RFC 6184).
///
/// Why not FFmpeg's RTSP demuxer, which LiveRelay used before and still uses for everything
/// else: its H.264 parser finds the end of a picture only when the next one starts, so each
/// picture waits one frame interval (33 ms at 30 fps) after its last packet came. The RTP
/// marker bit says where a picture ends; FFmpeg's H.264 depacketizer ignores it. Here a picture
/// is handed on as soon as its last packet arrives.
///
/// What it does not take (other codecs, pictures that may be reordered, interleaved-mode
/// RTP), `open` hands to FFmpeg's demuxer instead, and remembers that for the URL.
///
/// Confined to the ingest thread; every wait is bounded by a deadline and by the interrupt
/// handle (polled every 100 ms at most).
public final class RTSPSource: RTSPTransportReporting {
    public let url: String
    public let redactedURL: String
    public let options: SourceOptions
    public let interruptHandle: InterruptHandle
    public private(set) var streams: [StreamInfo] = []
    public let formatName = "rtsp"
    public private(set) var transportUsed: SourceOptions.Transport?

    private let address: RTSPAddress
    private let logger: Logger
    private var link: TCPLink?
    private var cseq = 0
    private var auth: RTSPAuth?
    private var session: String?
    private var playURL = ""
    private var keepaliveMethod = "OPTIONS"
    private var keepaliveInterval: UInt64 = 30_000_000_000
    private var nextKeepalive: UInt64 = .max
    private var nextReport: UInt64 = .max
    private var tracks: [RTPTrack] = []
    private var kinds: [MediaType] = []
    private var timeBases: [TimeBase] = []
    private var udp: [UDPPair] = []
    /// Interleaved channel → (track, is RTCP).
    private var channels: [UInt8: (track: Int, control: Bool)] = [:]
    private var polls: [pollfd] = []
    private var ready: [Packet] = []
    private var readyStart = 0
    private var timelines: [Timeline?] = []
    private var origin: UInt64?
    private var damagedUntilKeyframe = false
    /// The last video timestamps handed on (a repeated picture is told from a B-frame by them).
    private var recentVideoPTS: [Int64] = []
    private var recentNext = 0
    private var ended = false
    private let scratch: UnsafeMutablePointer<AVPacket>
    /// Set during the probe: the first keyframe (with parameter sets) and a second picture.
    private var probeKeyframe: RTPFrame?
    private var probeSecondPTS: Int64?
    private var probeFirstPTS: Int64?
    private var probeEvent = false
    private var serverSource: String?
    private var datagram = [UInt8](repeating: 0, count: 65536)

    private struct Timeline { var last: UInt32; var ext: Int64; let offset: Int64; var lastPTS: Int64? = nil }

    static let probingStage = "probing streams"

    // MARK: - Opening

    /// Opens `url` with LiveRelay's own client when it can, else with FFmpeg's RTSP demuxer.
    public static func open(url: String, options: SourceOptions, interruptHandle: InterruptHandle, logger: Logger = Logger(label: "liverelay.demux")) throws(IngestError) -> any PacketSource {
        if !options.listen && options.rtspClient == .liverelay && !FFmpegPreferred.contains(url) {
            do {
                return try RTSPSource(url: url, options: options, interruptHandle: interruptHandle, logger: logger)
            } catch let u as Unsupported {
                logger.info("using FFmpeg's RTSP client", metadata: ["source": "\(Redactor.redact(url))", "reason": "\(u.reason)"])
                FFmpegPreferred.insert(url)
                // Our connection stays open until FFmpeg's session is up: a server with shared
                // media (gst-rtsp-server) would take it down as ours closes and answer FFmpeg 503.
                return try withExtendedLifetime(u.connection) { () throws(IngestError) in
                    try IngestSession(url: url, options: options, interruptHandle: interruptHandle, logger: logger)
                }
            } catch let e as IngestError {
                throw e
            } catch {
                throw IngestError(.failed, source: url, stage: "opening", detail: "\(error)")
            }
        }
        return try IngestSession(url: url, options: options, interruptHandle: interruptHandle, logger: logger)
    }

    /// Something this client does not take; the source is opened with FFmpeg's instead.
    struct Unsupported: Error {
        let reason: String
        /// The session's connection, still open.
        var connection: AnyObject?
    }

    /// URLs whose streams this client handed to FFmpeg once: later opens go there directly.
    enum FFmpegPreferred {
        private static let urls = Mutex<Set<String>>([])
        static func contains(_ url: String) -> Bool { urls.withLock { $0.contains(url) } }
        static func insert(_ url: String) { _ = urls.withLock { $0.insert(url) } }
    }

    init(url: String, options: SourceOptions, interruptHandle: InterruptHandle, logger: Logger) throws {
        guard let address = RTSPAddress(url) else {
            throw IngestError(.failed, source: url, stage: "opening", detail: "not an rtsp:// URL")
        }
        guard let pkt = av_packet_alloc() else { throw IngestError(.failed, source: url, stage: "opening", detail: "out of memory") }
        scratch = pkt
        self.address = address
        self.url = url
        self.redactedURL = Redactor.redact(url)
        self.options = options
        self.interruptHandle = interruptHandle
        self.logger = logger
        let end = MonotonicClock.nanoseconds() &+ Timestamps.nanoseconds(options.openTimeout)
        if options.transport == .auto {
            do {
                // As FFmpeg's demuxer: UDP first, waiting for its media 60 % of what is left.
                try start(.udp, until: end, probeShare: 0.6)
            } catch let e as IngestError where e.kind != .stopped && e.stage == Self.probingStage {
                logger.info("UDP did not deliver; retrying over TCP", metadata: ["source": "\(redactedURL)", "error": "\(e)"])
                reset()
                do {
                    try start(.tcp, until: end, probeShare: 1)
                } catch let t as IngestError where t.kind == .timedOut {
                    throw IngestError(.timedOut, source: url, stage: t.stage, detail: "no media within \(formatSeconds(options.openTimeout)) (UDP, then TCP)")
                }
            } catch let e as IngestError where e.kind == .timedOut {
                throw IngestError(.timedOut, source: url, stage: e.stage, detail: "no answer within \(formatSeconds(options.openTimeout))")
            }
        } else {
            try start(options.transport, until: end, probeShare: 1)
        }
    }

    deinit {
        reset()
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// Ends the session (TEARDOWN, without waiting for the answer) and closes its sockets.
    private func reset() {
        if let link, session != nil, !link.isClosed {
            try? link.send(requestBytes("TEARDOWN", url: playURL, headers: []), deadline: MonotonicClock.nanoseconds() &+ 50_000_000, interrupt: InterruptHandle())
        }
        link = nil
        session = nil
        for u in udp { close(u.rtp); close(u.rtcp) }
        udp = []
        tracks = []
        kinds = []
        timeBases = []
        channels = [:]
        polls = []
        ready = []
        readyStart = 0
        timelines = []
        origin = nil
        auth = nil
        serverSource = nil
        probeKeyframe = nil
        probeFirstPTS = nil
        probeSecondPTS = nil
        recentVideoPTS = []
        recentNext = 0
        damagedUntilKeyframe = false
        ended = false
    }

    private func fail(_ e: WireError, stage: String, deadline: Double) -> IngestError {
        switch e {
        case .unreachable(let m): return IngestError(.unreachable, source: url, stage: stage, detail: m)
        case .timedOut: return IngestError(.timedOut, source: url, stage: stage, detail: "no answer within \(formatSeconds(deadline))")
        case .stopped: return IngestError(.stopped, source: url, stage: stage, detail: "stopped")
        case .closed: return IngestError(.failed, source: url, stage: stage, detail: "the server closed the connection")
        case .status(let code, let reason):
            let detail = code == 401 ? (address.user == nil ? "the server wants credentials (401 \(reason))" : "credentials refused (401 \(reason))")
                                     : "server answered \(code) \(reason)"
            return IngestError((400..<500).contains(code) ? .refused : .failed, source: url, stage: stage, detail: detail)
        case .invalid(let m): return IngestError(.invalidData, source: url, stage: stage, detail: m)
        case .failed(let m): return IngestError(.failed, source: url, stage: stage, detail: m)
        case .unsupported(let m): return IngestError(.failed, source: url, stage: stage, detail: "not supported: " + m)
        }
    }

    private func seconds(until deadline: UInt64) -> Double {
        max(0, Double(Int64(bitPattern: deadline &- MonotonicClock.nanoseconds())) / 1e9)
    }

    /// The RTSP exchange over one transport, then the probe: all before `end`.
    private func start(_ transport: SourceOptions.Transport, until end: UInt64, probeShare: Double) throws {
        transportUsed = transport
        let total = seconds(until: end)
        let described: SDP
        do throws(WireError) {
            link = try TCPLink(host: address.host, port: address.port, deadline: end, interrupt: interruptHandle)
            let o = try request("OPTIONS", url: address.requestURL, headers: [], until: end)
            if o.status == 401 { throw WireError.status(401, o.reason) }
            if o.status == 200, let p = o.header("public"), p.uppercased().contains("GET_PARAMETER") { keepaliveMethod = "GET_PARAMETER" }
            let d = try request("DESCRIBE", url: address.requestURL, headers: ["Accept: application/sdp"], until: end)
            guard d.status == 200 else { throw WireError.status(d.status, d.reason) }
            let base = d.header("content-base") ?? d.header("content-location") ?? address.requestURL
            described = SDP(String(decoding: d.body, as: UTF8.self))
            try makeTracks(described, base: base, transport: transport, until: end)
            playURL = SDP.resolve(described.control, base: base)
            let p = try request("PLAY", url: playURL, headers: ["Range: npt=0.000-"], until: end)
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
        let probeEnd = now &+ UInt64(Double(end &- min(end, now)) * probeShare)
        try probe(described, until: probeEnd, deadline: seconds(until: probeEnd))
    }

    /// One track per H.264 video, AAC or G.711 audio section (others are left out: ONVIF
    /// metadata); SETUP for each.
    private func makeTracks(_ sdp: SDP, base: String, transport: SourceOptions.Transport, until end: UInt64) throws(WireError) {
        let queue = transport == .udp ? (options.reorderQueueSize ?? 500) : 0
        let wait = options.reorderWait ?? 0.1
        var chosen: [(SDP.Media, RTPPayloadFormat)] = []
        for m in sdp.media {
            switch (m.kind, m.encoding) {
            case ("video", "H264"):
                if let mode = m.fmtp["packetization-mode"], mode == "2" { throw unsupported("H.264 in interleaved packetization mode") }
                chosen.append((m, .h264))
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
        guard chosen.contains(where: { $0.0.kind == "video" }) else { throw unsupported("no H.264 video") }
        for (i, (m, format)) in chosen.enumerated() {
            guard m.clockRate > 0, (0...127).contains(m.payloadType) else { throw unsupported("\(m.kind) with no clock rate") }
            tracks.append(RTPTrack(streamIndex: i, format: format, payloadType: m.payloadType, clockRate: m.clockRate, queueSize: queue, maxDelay: wait))
            kinds.append(m.kind == "video" ? .video : .audio)
            timeBases.append(TimeBase(1, Int32(clamping: m.clockRate)))
            timelines.append(nil)
            var spec: String
            if transport == .tcp {
                spec = "RTP/AVP/TCP;unicast;interleaved=\(2 * i)-\(2 * i + 1)"
            } else {
                let pair = try UDPPair(family: link!.peer.ss_family)
                udp.append(pair)
                spec = "RTP/AVP;unicast;client_port=\(pair.port)-\(pair.port + 1)"
            }
            let r = try request("SETUP", url: SDP.resolve(m.control, base: base), headers: ["Transport: " + spec], until: end)
            guard r.status == 200 else {
                if r.status == 461 && transport == .udp { throw WireError.status(461, "Unsupported Transport (UDP)") }
                throw WireError.status(r.status, r.reason)
            }
            if session == nil, let s = r.header("session") {
                let parts = s.split(separator: ";")
                session = parts.first.map { $0.trimmingCharacters(in: .whitespaces) }
                if let t = parts.dropFirst().first(where: { $0.trimmingCharacters(in: .whitespaces).lowercased().hasPrefix("timeout=") }),
                   let secs = Double(t.split(separator: "=")[1].trimmingCharacters(in: .whitespaces)), secs >= 2 {
                    keepaliveInterval = UInt64(secs / 2 * 1e9)
                }
            }
            let reply = RTSPAuth.parameters((r.header("transport") ?? "").replacingOccurrences(of: ";", with: ","))
            if transport == .tcp {
                let ch = (reply["interleaved"] ?? "\(2 * i)-\(2 * i + 1)").split(separator: "-").compactMap { UInt8($0) }
                guard let rtp = ch.first else { throw WireError.invalid("SETUP answered with no interleaved channel") }
                channels[rtp] = (i, false)
                channels[ch.count > 1 ? ch[1] : rtp &+ 1] = (i, true)
            } else {
                if let sp = reply["server_port"]?.split(separator: "-").compactMap({ UInt16($0) }), let first = sp.first {
                    udp[i].serverRTCP = sp.count > 1 ? sp[1] : first &+ 1
                }
                if let s = reply["source"] { serverSource = s }
            }
        }
    }

    private func unsupported(_ reason: String) -> WireError { .unsupported(reason) }

    // MARK: - Requests

    private func requestBytes(_ method: String, url: String, headers: [String]) -> [UInt8] {
        cseq += 1
        var s = "\(method) \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: LiveRelay\r\n"
        if var a = auth, let h = a.header(method: method, uri: url) { auth = a; s += "Authorization: \(h)\r\n" }
        if let session { s += "Session: \(session)\r\n" }
        for h in headers { s += h + "\r\n" }
        return Array((s + "\r\n").utf8)
    }

    /// Sends a request and waits for its answer (media arriving meanwhile is taken); answers a
    /// 401 once with the URL's credentials.
    private func request(_ method: String, url: String, headers: [String], until end: UInt64) throws(WireError) -> RTSPResponse {
        var answered = false
        while true {
            guard let link else { throw .closed }
            try link.send(requestBytes(method, url: url, headers: headers), deadline: end, interrupt: interruptHandle)
            let want = cseq
            let r = try response(to: want, until: end)
            if r.status == 401, !answered, let user = address.user {
                answered = true
                var a = RTSPAuth(user: user, password: address.password ?? "")
                if a.challenge(r.headers("www-authenticate")) { auth = a; continue }
            }
            return r
        }
    }

    private func response(to cseq: Int, until end: UInt64) throws(WireError) -> RTSPResponse {
        guard let link else { throw .closed }
        while true {
            while let chunk = try RTSPParse.next(link.input) {
                switch chunk {
                case .response(let r):
                    if r.header("cseq").flatMap({ Int($0) }) == cseq { return r }
                case .interleaved(let channel, let payload):
                    take(channel: channel, payload)
                }
            }
            if link.isClosed { throw .closed }
            try link.fill(deadline: end, interrupt: interruptHandle)
        }
    }

    // MARK: - Probe

    /// Waits for the first picture that can start decoding (a keyframe, with parameter sets from
    /// the SDP or the stream), then takes the streams' parameters from it and from the SDP.
    private func probe(_ sdp: SDP, until end: UInt64, deadline: Double) throws {
        let videoIndex = kinds.firstIndex(of: .video)!
        let media = sdp.media.filter { ["video", "audio"].contains($0.kind) }
        let videoMedia = media.first { $0.kind == "video" }!
        let sprop = RTSPStreamParameters.parameterSets(videoMedia.fmtp["sprop-parameter-sets"])
        var params: (CodecParameters, Double?)?
        while params == nil || (params!.1 == nil && probeSecondPTS == nil) {
            if let key = probeKeyframe, params == nil {
                var extradata = sprop
                if extradata.isEmpty, let t = tracks.first(where: { $0.format == .h264 }), let sps = t.inBandSPS, let pps = t.inBandPPS {
                    extradata = [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps
                }
                let v = try RTSPStreamParameters.video(keyframe: key.data, extradata: extradata, source: url)
                if v.mayReorder { throw Unsupported(reason: "pictures may be reordered (B-frames)", connection: link) }
                params = (v.parameters, v.frameRate)
            }
            if params != nil && params!.1 == nil && probeSecondPTS != nil { break }
            do throws(WireError) {
                probeEvent = false
                try pump(until: end, probing: true)
            } catch .timedOut where params != nil {
                break // no frame rate from a second picture: none
            } catch {
                let e = fail(error, stage: Self.probingStage, deadline: deadline)
                throw e.kind == .timedOut ? IngestError(.timedOut, source: url, stage: Self.probingStage, detail: "no picture to start from within \(formatSeconds(deadline))") : e
            }
            if ended { throw IngestError(.failed, source: url, stage: Self.probingStage, detail: "the server ended the stream") }
        }
        var found: [StreamInfo] = []
        for (i, t) in tracks.enumerated() {
            if i == videoIndex {
                var rate = params!.1
                if rate == nil, let a = probeFirstPTS, let b = probeSecondPTS, b > a { rate = Double(t.clockRate) / Double(b - a) }
                found.append(StreamInfo(index: i, timeBase: timeBases[i], frameRate: rate, parameters: params!.0))
            } else {
                found.append(StreamInfo(index: i, timeBase: timeBases[i], frameRate: nil, parameters: try RTSPStreamParameters.audio(media[i], format: t.format, source: url)))
            }
        }
        streams = found
    }

    // MARK: - Reading

    public func readPacket() throws -> Packet? {
        let deadline = MonotonicClock.nanoseconds() &+ Timestamps.nanoseconds(options.readTimeout)
        while true {
            if readyStart < ready.count {
                let p = ready[readyStart]
                readyStart += 1
                if readyStart == ready.count { ready.removeAll(keepingCapacity: true); readyStart = 0 }
                return p
            }
            if ended { return nil }
            do throws(WireError) {
                try pump(until: deadline)
            } catch .closed {
                return nil
            } catch {
                throw fail(error, stage: "reading", deadline: options.readTimeout)
            }
        }
    }

    /// Waits for and takes what arrives (answers, RTP, RTCP) until a packet is ready (while
    /// probing: until the probe has a new picture), the server ends, or `deadline`; sends
    /// keep-alives and receiver reports when due.
    private func pump(until deadline: UInt64, probing: Bool = false) throws(WireError) {
        guard let link else { throw .closed }
        while (probing ? !probeEvent : readyStart >= ready.count) && !ended {
            var ms = try pollSlice(until: deadline, interrupt: interruptHandle)
            let now = MonotonicClock.nanoseconds()
            for t in tracks {
                if let r = t.nextRelease { ms = min(ms, Int32((r &- min(r, now)) / 1_000_000)) }
            }
            let n = poll(&polls, nfds_t(polls.count), max(0, ms))
            let after = MonotonicClock.nanoseconds()
            if n > 0 {
                if polls[0].revents != 0 {
                    guard try link.receive() else { ended = true; return }
                    while let chunk = try RTSPParse.next(link.input) {
                        if case .interleaved(let channel, let payload) = chunk { take(channel: channel, payload) }
                    }
                    if link.isClosed { ended = true }
                }
                var k = 1
                for (i, u) in udp.enumerated() {
                    if polls[k].revents != 0 { drain(u.rtp, track: i, control: false) }
                    if polls[k + 1].revents != 0 { drain(u.rtcp, track: i, control: true) }
                    k += 2
                }
            }
            for i in tracks.indices where tracks[i].nextRelease != nil {
                tracks[i].releaseDue(now: after)
                collect(i)
            }
            if tracks.contains(where: \.saidBye) { ended = true }
            if after >= nextKeepalive {
                nextKeepalive = after &+ keepaliveInterval
                try? link.send(requestBytes(keepaliveMethod, url: playURL, headers: []), deadline: after &+ 100_000_000, interrupt: interruptHandle)
            }
            if after >= nextReport { sendReports() }
        }
    }

    private func take(channel: UInt8, _ payload: ArraySlice<UInt8>) {
        guard let (i, control) = channels[channel] else { return }
        payload.withUnsafeBytes { b in
            if control { tracks[i].receiveControl(b) } else { tracks[i].receive(b, arrival: MonotonicClock.nanoseconds()) }
        }
        collect(i)
    }

    /// Reads every datagram waiting on one of a track's sockets; datagrams from anywhere but
    /// the server are dropped.
    private func drain(_ fd: Int32, track i: Int, control: Bool) {
        guard let link else { return }
        while true {
            var from = sockaddr_storage()
            var fromLen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = datagram.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress!, b.count, 0, $0, &fromLen) } }
            }
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                break
            }
            guard UDPPair.sameHost(from, link.peer) || serverSource.map({ UDPPair.host(from) == $0 }) == true else { continue }
            let arrival = MonotonicClock.nanoseconds()
            datagram.withUnsafeBytes { b in
                let d = UnsafeRawBufferPointer(rebasing: b[0..<n])
                if control { tracks[i].receiveControl(d) } else { tracks[i].receive(d, arrival: arrival) }
            }
        }
        collect(i)
    }

    /// Turns a track's finished frames into packets, in the order they were finished.
    private func collect(_ i: Int) {
        let t = tracks[i]
        guard !t.frames.isEmpty else { return }
        for f in t.frames { packet(of: f, track: i) }
        t.frames.removeAll(keepingCapacity: true) // unique again: its buffer is kept
    }

    private func packet(of f: RTPFrame, track i: Int) {
        let t = tracks[i], kind = kinds[i]
        // One timeline per track from its RTP clock; the tracks lined up by when each began.
        let pts: Int64
        if var tl = timelines[i] {
            tl.ext += Int64(Int32(bitPattern: f.timestamp &- tl.last))
            tl.last = f.timestamp
            timelines[i] = tl
            pts = tl.ext + tl.offset
        } else {
            let o = origin ?? f.arrivalNanos
            origin = o
            let offset = Int64(Double(f.arrivalNanos &- min(o, f.arrivalNanos)) * Double(t.clockRate) / 1e9)
            timelines[i] = Timeline(last: f.timestamp, ext: 0, offset: offset)
            pts = offset
        }
        // A picture sent again (gst-rtsp-server sends its first keyframe again to every viewer
        // of a shared stream when another joins) is dropped; a picture shortly before the last
        // one is a B-frame, whose decode order is not known here (FFmpeg's client next time).
        // Anything else going back (a camera that restarted its clock) is handed on, as
        // FFmpeg's demuxer does: the hub's timeline takes it as a discontinuity.
        if let last = timelines[i]?.lastPTS, pts <= last {
            if kind == .video ? recentVideoPTS.contains(pts) : pts == last {
                return
            }
            if kind == .video && last - pts < Int64(t.clockRate) {
                FFmpegPreferred.insert(url)
                logger.warning("pictures arrive out of presentation order (B-frames); the next connection uses FFmpeg's RTSP client", metadata: ["source": "\(redactedURL)"])
                ended = true
                return
            }
        }
        timelines[i]?.lastPTS = pts
        if kind == .video {
            if recentVideoPTS.count < 64 { recentVideoPTS.append(pts) } else { recentVideoPTS[recentNext] = pts; recentNext = (recentNext + 1) % 64 }
            if streams.isEmpty {
                // Probing: pictures before the first keyframe cannot be decoded; keep them out.
                if probeKeyframe == nil {
                    guard f.isKey else { return }
                    probeKeyframe = f
                    probeFirstPTS = pts
                    probeEvent = true
                } else if probeSecondPTS == nil {
                    probeSecondPTS = pts
                    probeEvent = true
                }
            }
        }
        let count = f.data.count
        guard av_new_packet(scratch, Int32(count)) >= 0 else { return }
        f.data.withUnsafeBytes { _ = memcpy(scratch.pointee.data, $0.baseAddress!, count) }
        scratch.pointee.pts = pts
        scratch.pointee.dts = pts
        scratch.pointee.stream_index = Int32(i)
        if f.isKey { scratch.pointee.flags = AV_PKT_FLAG_KEY }
        switch t.format {
        case .aac: scratch.pointee.duration = 1024
        case .g711: scratch.pointee.duration = Int64(count)
        case .h264: break
        }
        guard let p = try? Packet(movingFrom: scratch, timeBase: timeBases[i], mediaType: kind, arrivalNanos: f.arrivalNanos) else {
            av_packet_unref(scratch)
            return
        }
        if f.lostBefore > 0 {
            p.lostBefore = f.lostBefore
            damagedUntilKeyframe = true
        } else if f.isKey && kind == .video {
            damagedUntilKeyframe = false
        }
        if kind == .video { p.isDamaged = damagedUntilKeyframe }
        if let sr = t.senderReport {
            p.senderWallMicros = sr.wallMicros &+ Int64(Int32(bitPattern: f.timestamp &- sr.timestamp)) * 1_000_000 / Int64(t.clockRate)
        }
        ready.append(p)
    }

    /// RTCP receiver reports (empty: they keep the session alive and open NAT mappings) to
    /// each track's server port, every 5 s, over UDP.
    private func sendReports() {
        nextReport = MonotonicClock.nanoseconds() &+ 5_000_000_000
        guard let link else { return }
        for u in udp { u.report(to: link.peer) }
    }
}
