import Foundation
import Crypto
import Wire
public import Relay
import MediaCore
import Mux
public import Demux
public import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `forward` entries that are WHIP endpoints (`whip://`, `whip+http://`, `https://`): each a
/// `WHIPPusher` on the stream.
public final class WHIPPushFeature: EngineFeature {
    public init() {}
    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        for (i, target) in stream.forward.enumerated() where target.isWHIP {
            _ = WHIPPusher(hub: hub, index: i, target: target, logger: logger)
        }
    }
}

/// Pushes a stream to a WHIP endpoint (RFC 9725: another relay, a cloud service) as a WebRTC
/// publisher: it POSTs an SDP offer (send-only H.264 and Opus, audio in another codec made Opus
/// as for WHEP viewers) with its bearer token, checks the answer's ICE candidate (ICE-lite
/// servers: one nominating check, then one every 2 s for consent), does the DTLS handshake in
/// the role the answer gives it, and sends SRTP. The server's PLI or FIR asks the source for a
/// keyframe. A session that cannot be made, or whose consent lapses (10 s without an answer to a
/// check), is ended (DELETE) and made again with backoff, resuming at a keyframe, like every
/// forward; its state, reconnects, bytes and last error are the API's `forwards`.
/// Its own queue and thread: it never slows the stream or another output.
public final class WHIPPusher: PacketOutput, ForwardReporting, @unchecked Sendable {
    // Safety: `work` is confined to the worker's thread; the status box is locked.
    public let handle: OutputHandle
    private let worker: PacketWorker
    private let ledger: ForwardLedger

    public init(hub: StreamHub, index: Int, target: ForwardTarget, backoff: Backoff = Backoff(), logger: Logger) {
        var l = logger
        l[metadataKey: "forward.destination"] = "\(Redactor.redact(target.url, hideStreamKey: true))"
        handle = hub.attachOutput("forward\(index)", kind: .forward, policy: SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 2000)),
                                  taking: .blocking(batching: false))
        let ledger = ForwardLedger(destination: target.url, backoff: backoff)
        self.ledger = ledger
        worker = PacketWorker(handle: handle, work: WHIPWork(target: target, hub: hub, handle: handle, status: ledger, logger: l))
        hub.register(self)
    }

    public func start() { worker.start() }
    public func stop() async { await worker.stop() }

    public var currentStatus: ForwardStatus { ledger.status }
}

/// The pusher's connection, confined to its worker thread.
private final class WHIPWork: PacketWork {
    let target: ForwardTarget
    weak var hub: StreamHub?
    let handle: OutputHandle
    var queue: SinkQueue<RelayPacket> { handle.queue }
    let status: ForwardLedger
    let logger: Logger
    var session: WHIPSession?
    var cut: (packetizer: WebRTCPacketizer, layout: [String])?
    var timeline = PacketTimeline()

    init(target: ForwardTarget, hub: StreamHub, handle: OutputHandle, status: ForwardLedger, logger: Logger) {
        self.target = target
        self.hub = hub
        self.handle = handle
        self.status = status
        self.logger = logger
    }

    var wakeWithin: Double? { session == nil ? nil : 1 }

    func process(_ item: RelayPacket) {
        if session == nil {
            guard status.mayConnect, item.isKeyframe else { queue.dropTaken(.resync); return }
            connect(item.epoch)
            guard session != nil else { queue.dropTaken(.resync); return }
        }
        guard let session, let cut else { return }
        if queue.takeDiscontinuity() { timeline.restart() }
        guard let at = timeline.place(item) else { return }
        if at.newEpoch && RTPFeed.layout(at.epoch) != cut.layout {
            // The source came back with other tracks: a new offer for them.
            disconnect(reason: nil)
            connect(at.epoch)
            return
        }
        do {
            let out = try cut.packetizer.packetize(at.packet, pts: at.pts, dts: at.dts)
            status.sent(session.send(out.filter { !$0.isRTCP }))
        } catch {
            handle.countError()
            timeline.restart()
        }
        check(session)
    }

    func idle() {
        if let session { check(session) }
    }

    /// Consent: a check every 2 s; none answered for 10 s ends the session.
    func check(_ session: WHIPSession) {
        if let why = session.keepAlive() {
            queue.dropTaken(.resync)
            disconnect(reason: why)
        }
    }

    func connect(_ epoch: IngestEpoch) {
        do throws(WebRTCError) {
            let packetizer: WebRTCPacketizer
            do { packetizer = try WebRTCPacketizer(streams: epoch.streams, title: hub?.name ?? "LiveRelay", maxPacketSize: 1200) } catch {
                throw WebRTCError("the stream's tracks cannot be sent in RTP: \(error)")
            }
            let s = try WHIPSession(target: target, tracks: packetizer.packetizer.tracks, requestKeyframe: { [weak hub] in _ = hub?.requestKeyframe() })
            session = s
            cut = (packetizer, RTPFeed.layout(epoch))
            timeline = PacketTimeline()
            queue.discardAll(.resync)
            status.connected(handle)
            logger.info("forward: WHIP session up", metadata: ["tracks": "\(s.sentTracks)", "over": "\(s.transport)"])
        } catch {
            disconnect(reason: error.description)
        }
    }

    func disconnect(reason: String?) {
        session?.close()
        session = nil
        cut = nil
        guard let reason else { return }
        let (delay, said) = status.failed(reason, handle)
        logger.warning("forward: WHIP endpoint down; retrying", metadata: ["error": "\(said)", "retry_s": "\(delay)"])
    }

    func finish() {
        session?.close()
        session = nil
        status.stopped()
    }
}

/// One WHIP session, from the offer to the DELETE: its path to the server's candidate (UDP, or
/// ICE-TCP when UDP goes unanswered), DTLS and SRTP, and the server's RTCP on a thread of its own.
final class WHIPSession: @unchecked Sendable {
    // Safety: `send`, `keepAlive` and `close` come from the pusher's thread; the reader thread
    // touches only `lastAnswered` (atomic), the path's receiving side and the inbound SRTP
    // context, which are its own.
    private let path: CandidatePath
    private let resource: String?
    private let headers: [(String, String)]
    private let outbound: SRTPSession
    private let payloadTypes: [Int: UInt8]
    private let serverUfrag: String, serverPwd: String, ufrag: String
    /// What the reader thread and the pusher share.
    private final class Shared: Sendable {
        /// When a consent check was last answered (monotonic nanoseconds).
        let lastAnswered = Atomic<UInt64>(MonotonicClock.nanoseconds())
        let stopped = Atomic<Bool>(false)
    }
    private let shared = Shared()
    private var lastCheck: UInt64 = 0
    private let reader: Thread
    /// The tracks the server took, for the log.
    let sentTracks: [String]
    /// How the media goes: `udp`, or `tcp` (ICE-TCP) when UDP is blocked.
    var transport: String { path.transport }
    /// How long ICE checks go unanswered over UDP before a TCP candidate is tried.
    static let udpWithin: Duration = .seconds(2)
    static let consentTimeout: UInt64 = 10_000_000_000

    init(target: ForwardTarget, tracks: [RTPPacketizer.Track], requestKeyframe: @escaping @Sendable () -> Void) throws(WebRTCError) {
        let identity = try DTLSIdentity()
        let myUfrag = LoadViewer.token(8)
        ufrag = myUfrag
        let pwd = LoadViewer.token(24)
        // The offer: a send-only section per track, all on one transport.
        var d = SessionDescription(origin: .init(sessionID: UInt64.random(in: 1...UInt64(Int64.max)), sessionVersion: 1))
        var sections: [(track: Int, pt: Int)] = []
        for (i, t) in tracks.enumerated() {
            let format: SessionDescription.Format
            switch (t.mediaType, t.codecName) {
            case (.video, "h264"):
                format = .init(payloadType: 102, codec: "H264", clockRate: 90000,
                               parameters: ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42e01f"], feedback: ["nack", "nack pli", "ccm fir"])
            case (.audio, "opus"): format = .init(payloadType: 111, codec: "opus", clockRate: 48000, channels: 2, parameters: ["minptime": "10", "useinbandfec": "1"])
            case (.audio, "pcm_mulaw"): format = .init(payloadType: 0, codec: "PCMU", clockRate: 8000)
            case (.audio, "pcm_alaw"): format = .init(payloadType: 8, codec: "PCMA", clockRate: 8000)
            default: continue
            }
            var m = SessionDescription.Media(kind: t.mediaType == .video ? "video" : "audio", port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: [format])
            m.connection = "IN IP4 0.0.0.0"
            m.mid = String(sections.count)
            m.iceUfrag = ufrag
            m.icePwd = pwd
            m.fingerprint = identity.fingerprint
            m.setup = "actpass"
            m.rtcpMux = true
            m.direction = "sendonly"
            d.media.append(m)
            sections.append((i, format.payloadType))
        }
        guard !sections.isEmpty else { throw WebRTCError("no track WHIP can carry (H.264, Opus, PCMU, PCMA)") }
        d.bundle = sections.indices.map(String.init)
        var headers: [(String, String)] = [("Content-Type", "application/sdp")]
        if let token = target.bearerToken { headers.append(("Authorization", "Bearer \(token)")) }
        self.headers = headers
        let endpoint = target.whipEndpoint
        let answer: BoundedHTTP.Answer
        switch BoundedHTTP.sendWaiting(method: "POST", url: endpoint, headers: headers, body: Array(d.text.utf8), timeout: 10, maxBody: 64 * 1024) {
        case .success(let a): answer = a
        case .failure(let f): throw WebRTCError("the offer: \(f.description)")
        }
        guard answer.status == 201 else {
            let said = String(decoding: answer.body.prefix(200), as: UTF8.self).filter { !$0.isNewline }
            throw WebRTCError("the endpoint answered \(answer.status) \(said)")
        }
        let location = answer.header("Location").map { Self.resolve($0, against: endpoint) }
        resource = location
        // A session the endpoint made but this side cannot use is deleted there at once.
        let abandon = { Self.delete(location, headers: headers) }
        guard let sdp = SessionDescription(parsing: String(decoding: answer.body, as: UTF8.self)), let first = sdp.media.first,
              let server = sdp.credentials(first), let fingerprint = sdp.fingerprint(first) else {
            abandon()
            throw WebRTCError("the answer has no ICE credentials or fingerprint")
        }
        let candidates = sdp.media.flatMap(\.candidates).filter { $0.component == 1 }
        // UDP candidates by priority: the first this host can open (an IPv6 one fails at once
        // where IPv6 has no route) is the one ICE checks go to.
        let udps = candidates.filter { $0.transport.lowercased() == "udp" }.sorted { $0.priority > $1.priority }
        // ICE-TCP (RFC 6544): this side is active, so only a passive candidate can be reached.
        let tcp = candidates.filter { $0.transport.lowercased() == "tcp" && $0.tcpType?.lowercased() == "passive" }.max { $0.priority < $1.priority }
        guard !udps.isEmpty || tcp != nil else {
            abandon()
            throw WebRTCError("the answer has no UDP candidate and no passive TCP one")
        }
        serverUfrag = server.ufrag
        serverPwd = server.pwd
        // Each track the server took: its payload type in the answer.
        var pts: [Int: UInt8] = [:]
        var names: [String] = []
        for (k, section) in sections.enumerated() {
            guard let m = sdp.media.first(where: { $0.mid == String(k) }) ?? (k < sdp.media.count ? sdp.media[k] : nil), m.isActive,
                  let f = m.formats.first(where: { $0.payloadType == section.pt }) ?? m.formats.first else { continue }
            pts[section.track] = UInt8(clamping: f.payloadType)
            names.append(tracks[section.track].codecName)
        }
        guard !pts.isEmpty else { abandon(); throw WebRTCError("the endpoint took none of the offered tracks") }
        payloadTypes = pts
        sentTracks = names
        // The path: the UDP candidate, or the TCP one when UDP checks go unanswered (blocked).
        // ICE, then DTLS in the role the answer gives (a passive server: this side starts).
        let weStart = (sdp.media.first?.setup ?? sdp.setup) != "active"
        let check = { Self.bindingRequest(serverUfrag: server.ufrag, serverPwd: server.pwd, ufrag: myUfrag) }
        var reasons: [String] = []
        var made: (path: CandidatePath, keys: SRTPKeys)?
        // 10 s for the session in all, with at least 3 s left for the TCP candidate.
        let begun = ContinuousClock.now
        var checkedUDP = false
        for candidate in udps + [tcp].compactMap({ $0 }) where made == nil {
            let overTCP = candidate.transport.lowercased() == "tcp"
            // One UDP path is checked (its 2 s), then the TCP candidate.
            if !overTCP && checkedUDP { continue }
            let opened = overTCP ? CandidatePath.tcp(host: candidate.address, port: candidate.port, receiveTimeoutMicros: 50_000)
                                 : CandidatePath.udp(host: candidate.address, port: candidate.port, receiveTimeoutMicros: 50_000)
            let path: CandidatePath
            switch opened {
            case .success(let p): path = p
            case .failure(let e): reasons.append("\(overTCP ? "tcp" : "udp"): \(e.description)"); continue
            }
            if !overTCP { checkedUDP = true }
            let within: Duration = overTCP ? max(.seconds(3), .seconds(10) - (ContinuousClock.now - begun)) : .seconds(tcp != nil ? 7 : 10)
            do {
                let keys = try Self.handshake(path: path, identity: identity, fingerprint: fingerprint, client: weStart, within: within,
                                              iceWithin: !overTCP && tcp != nil ? Self.udpWithin : within, check: check)
                made = (path, keys)
            } catch {
                path.close()
                reasons.append("\(path.transport): \(error.description)")
            }
        }
        guard let made else {
            abandon()
            throw WebRTCError(reasons.joined(separator: "; "))
        }
        path = made.path
        do {
            outbound = try SRTPSession(key: made.keys.local, outbound: true, profile: made.keys.profile)
        } catch {
            path.close()
            abandon()
            throw error
        }
        let keys = made.keys
        let inbound = try? SRTPSession(key: keys.remote, outbound: false, profile: keys.profile)
        let path = self.path, shared = self.shared
        reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !shared.stopped.load(ordering: .relaxed) {
                guard let b = path.receive(&buffer), let first = b.first else { continue }
                if first <= 3 {
                    if STUNMessage(parsing: b)?.type == STUNMessage.bindingSuccess { shared.lastAnswered.store(MonotonicClock.nanoseconds(), ordering: .relaxed) }
                } else if (128...191).contains(first), RTCPMessage.isRTCP(b), let plain = inbound?.unprotectRTCP(b) {
                    for m in RTCPMessage.parse(plain) {
                        switch m {
                        case .pli, .fir: requestKeyframe()
                        default: break
                        }
                    }
                }
            }
        }
        reader.name = "whip-push"
        reader.start()
    }

    /// Sends RTP packets with the answer's payload types; the bytes sent.
    func send(_ datagrams: [RTPPacketizer.Datagram]) -> Int {
        var total = 0
        for d in datagrams where d.bytes.count >= 12 {
            guard let pt = payloadTypes[d.track] else { continue }
            var p = d.bytes
            p[1] = (p[1] & 0x80) | (pt & 0x7F)
            guard let protected = outbound.protect(p) else { continue }
            total += path.send(protected)
        }
        return total
    }

    /// A consent check when one is due; why the session is over, if it is.
    func keepAlive() -> String? {
        if let why = path.failure { return why }
        let now = MonotonicClock.nanoseconds()
        if now &- shared.lastAnswered.load(ordering: .relaxed) > Self.consentTimeout { return "the endpoint stopped answering consent checks" }
        if now &- lastCheck >= 2_000_000_000 {
            lastCheck = now
            path.send(Self.bindingRequest(serverUfrag: serverUfrag, serverPwd: serverPwd, ufrag: ufrag))
        }
        return nil
    }

    /// Ends the session: the reader stops, the socket closes, the resource is deleted (bounded).
    func close() {
        guard !shared.stopped.exchange(true, ordering: .relaxed) else { return }
        while !reader.isFinished && reader.isExecuting { usleep(10_000) }
        path.close()
        Self.delete(resource, headers: headers)
    }

    /// DELETEs a session's resource (bounded; whatever the endpoint answers).
    static func delete(_ resource: String?, headers: [(String, String)]) {
        guard let resource else { return }
        _ = BoundedHTTP.sendWaiting(method: "DELETE", url: resource, headers: headers.filter { $0.0 == "Authorization" }, timeout: 3, maxBody: 4096)
    }

    /// A nominating binding request to the server (ICE-lite: the client controls).
    static func bindingRequest(serverUfrag: String, serverPwd: String, ufrag: String) -> [UInt8] {
        let tid = (0..<12).map { _ in UInt8.random(in: 0...255) }
        let m = STUNMessage(type: STUNMessage.bindingRequest, transactionID: tid, attributes: [
            (STUNMessage.Attribute.username, Array("\(serverUfrag):\(ufrag)".utf8)),
            (STUNMessage.Attribute.priority, [0x6E, 0x7F, 0x1E, 0xFF]),
            (STUNMessage.Attribute.iceControlling, (0..<8).map { _ in UInt8.random(in: 0...255) }),
            (STUNMessage.Attribute.useCandidate, []),
        ])
        let key = SymmetricKey(data: Array(serverPwd.utf8))
        return m.serialized(integrity: { Array(HMAC<Insecure.SHA1>.authenticationCode(for: $0, using: key)) })
    }

    /// ICE checks until one is answered (within `iceWithin`), then the DTLS handshake; at most
    /// `within` in all.
    static func handshake(path: CandidatePath, identity: DTLSIdentity, fingerprint: String, client: Bool, within: Duration, iceWithin: Duration,
                          check: () -> [UInt8]) throws(WebRTCError) -> SRTPKeys {
        let dtls = try DTLSTransport(identity: identity, peerFingerprint: fingerprint, client: client)
        func send(_ b: [UInt8]) { path.send(b) }
        let begun = ContinuousClock.now
        let end = begun + within
        var lastCheck = begun - .seconds(1), iceUp = false
        var buffer = [UInt8](repeating: 0, count: 2048)
        while ContinuousClock.now < end && (iceUp || ContinuousClock.now < begun + iceWithin) {
            if let why = path.failure { throw WebRTCError(why) }
            if !iceUp && ContinuousClock.now - lastCheck > .milliseconds(200) {
                send(check())
                lastCheck = ContinuousClock.now
            }
            guard let b = path.receive(&buffer), let first = b.first else {
                if iceUp { let out = dtls.tick(); if !out.isEmpty { send(out) } }
                continue
            }
            if first <= 3 {
                if !iceUp, STUNMessage(parsing: b)?.type == STUNMessage.bindingSuccess {
                    iceUp = true
                    if client { send(dtls.start()) }
                }
            } else if (20...63).contains(first) {
                let r = try dtls.receive(b)
                if !r.send.isEmpty { send(r.send) }
                if let keys = r.keys { return keys }
            }
        }
        throw WebRTCError(iceUp ? "the DTLS handshake did not complete within \(within.components.seconds) s"
                                : "no answer to ICE checks within \(min(iceWithin, within).components.seconds) s")
    }

    /// A `Location` header made absolute against the endpoint it came from.
    static func resolve(_ location: String, against endpoint: String) -> String {
        if location.lowercased().hasPrefix("http://") || location.lowercased().hasPrefix("https://") { return location }
        guard let base = URL(string: endpoint), let url = URL(string: location, relativeTo: base) else { return location }
        return url.absoluteString
    }
}
