import Crypto
import Demux
import Foundation
public import Logging
import MediaCore
import Mux
public import NIOCore
import NIOPosix
public import Relay
import Synchronization
import Wire

/// WebRTC out (WHEP, draft-ietf-wish-whep): every viewer on one UDP port, told apart by ICE
/// username and address. The server is ICE-lite (RFC 8445 §2.5): it answers a browser's checks
/// and never checks itself. DTLS (OpenSSL) gives the SRTP keys (libsrtp2); the media is the
/// stream's own, cut into RTP by FFmpeg's packetizers without re-encoding, one output per viewer.
public final class WebRTCServer: Sendable {
    public struct Settings: Sendable, Equatable {
        public var host: String
        public var port: Int
        /// Addresses written as host candidates; the bound address (or, bound to every
        /// address, each interface's) when empty.
        public var hosts: [String]
        /// Each viewer's output policy.
        public var policy: SinkPolicy
        /// Sessions one client address may hold at once (`server.limits.per_client.viewers`).
        public var sessionsPerClient: Int
        /// ICE over TCP (RFC 6544, passive), for peers whose UDP is blocked: nil off; 0 the UDP
        /// port's number where it is free, else one the system picks; else that port.
        public var tcpPort: Int?
        /// STUN and TURN servers offered to clients (`server.webrtc.ice_servers`).
        public var iceServers: [ICEServer]
        public init(host: String, port: Int = 0, hosts: [String] = [],
                    policy: SinkPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 500)),
                    sessionsPerClient: Int = 32, tcpPort: Int? = 0, iceServers: [ICEServer] = []) {
            self.host = host
            self.iceServers = iceServers
            self.port = port
            self.tcpPort = tcpPort
            self.hosts = hosts
            self.policy = policy
            self.sessionsPerClient = sessionsPerClient
        }
    }

    /// Why an offer got no session.
    public enum OfferError: Error, CustomStringConvertible, Sendable {
        case badOffer(String)
        case notLive
        case noCommonCodec(String)
        case failed(String)
        /// WHIP: the stream has a publisher already.
        case busy
        /// WHIP: the stream does not take publishers.
        case notPublishable
        /// The client holds `server.limits.per_client.viewers` sessions already.
        case tooMany

        public var description: String {
            switch self {
            case .badOffer(let s): "bad offer: \(s)"
            case .notLive: "the stream has not connected yet"
            case .noCommonCodec(let s): s
            case .failed(let s): s
            case .busy: "the stream already has a publisher"
            case .notPublishable: "the stream does not take publishers (source: publish)"
            case .tooMany: "too many WebRTC sessions from this address (server.limits.per_client.viewers)"
            }
        }
    }

    struct Registry {
        var byUfrag: [String: WebRTCSession] = [:]
        var byAddress: [PeerAddress: WebRTCSession] = [:]
        var byID: [String: WebRTCSession] = [:]
        /// Sessions per client address, and each session's client.
        var perClient: [String: Int] = [:]
        var clientOf: [String: String] = [:]

        /// Counts a new session of `client`; false when it holds its limit already.
        mutating func admit(_ client: String, limit: Int) -> Bool {
            let n = perClient[client] ?? 0
            guard n < limit else { return false }
            perClient[client] = n + 1
            return true
        }

        mutating func release(_ client: String) {
            let n = (perClient[client] ?? 1) - 1
            perClient[client] = n > 0 ? n : nil
        }
    }

    public let settings: Settings
    public let port: Int
    /// The ICE-TCP port; nil when it is off.
    public let tcpPort: Int?
    public let candidates: [String]
    let identity: DTLSIdentity
    let channel: any Channel
    private let tcpListener: (any Channel)?
    let tcp: ICETCPConnections
    let registry = Mutex(Registry())
    let counters = WebRTCCounters()
    private let logger: Logger
    private let timer: Mutex<RepeatedTask?> = Mutex(nil)

    /// Binds the UDP port.
    public static func start(_ settings: Settings, logger: Logger) async throws -> WebRTCServer {
        let identity = try DTLSIdentity()
        let box = HandlerBox()
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelInitializer { ch in ch.pipeline.addHandler(DatagramHandler(box: box)) }
            .bind(host: settings.host, port: settings.port).get()
        let tcp = ICETCPConnections(limitPerClient: settings.sessionsPerClient)
        var listener: (any Channel)?
        if let p = settings.tcpPort {
            do {
                listener = try await ICETCPConnections.listen(host: settings.host, port: p == 0 ? channel.localAddress?.port ?? 0 : p,
                                                             exact: p != 0, connections: tcp, box: box)
            } catch {
                try? await channel.close()
                throw error
            }
        }
        let server = WebRTCServer(settings: settings, channel: channel, tcpListener: listener, tcp: tcp, identity: identity, logger: logger)
        box.server.withLock { $0 = server }
        server.timer.withLock { t in
            t = channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in server.tick() }
        }
        return server
    }

    private init(settings: Settings, channel: any Channel, tcpListener: (any Channel)?, tcp: ICETCPConnections, identity: DTLSIdentity, logger: Logger) {
        self.settings = settings
        self.channel = channel
        self.tcpListener = tcpListener
        self.tcp = tcp
        tcpPort = tcpListener?.localAddress?.port
        self.identity = identity
        self.logger = logger
        port = channel.localAddress?.port ?? settings.port
        var c = settings.hosts
        if c.isEmpty {
            if let ip = channel.localAddress?.ipAddress, ip != "0.0.0.0", ip != "::" {
                c = [ip]
            } else {
                c = ((try? System.enumerateDevices()) ?? []).compactMap { d in
                    guard case .v4 = d.address, let ip = d.address?.ipAddress else { return nil }
                    return ip
                }
                c = Array(Set(c)).sorted { a, b in (a.hasPrefix("127.") ? 1 : 0, a) < (b.hasPrefix("127.") ? 1 : 0, b) }
            }
        }
        candidates = c
    }

    public func stop() async {
        timer.withLock { $0?.cancel() }
        let all = registry.withLock { r in
            defer { r = Registry() }
            return Array(r.byID.values)
        }
        for s in all { s.close() }
        try? await tcpListener?.close()
        tcp.closeAll()
        try? await channel.close()
    }


    /// A WHEP offer for `hub`: the SDP answer and the session's id (for the `Location`).
    public func whep(offer text: String, hub: StreamHub, viewer: String, client: String = "-") throws(OfferError) -> (id: String, answer: String) {
        let (offer, creds, fp) = try Self.read(offer: text)
        guard hub.latestEpoch != nil else { throw .notLive }
        guard registry.withLock({ $0.admit(client, limit: settings.sessionsPerClient) }) else { throw .tooMany }
        var admitted = true
        defer { if admitted { registry.withLock { $0.release(client) } } }
        let id = Self.token(16)
        let feed: RTPFeed?
        do {
            feed = try RTPFeed.attachShared(hub: hub, name: "webrtc-\(id.prefix(8))", kind: .webrtc, policy: settings.policy, maxPacketSize: 1200)
        } catch {
            throw .failed("cannot cut the stream into RTP: \(error)")
        }
        guard let feed else { throw .notLive }
        let streams = hub.latestEpoch?.streams ?? []
        let plan = AnswerPlan.make(offer: offer, tracks: feed.description.tracks, streams: streams)
        guard plan.sending.values.contains(where: { _ in true }) else {
            feed.finish()
            throw .noCommonCodec("no track of the stream can be sent in a format the offer takes (\(feed.description.tracks.map(\.codecName).joined(separator: ", ")))")
        }
        let ufrag = Self.token(8), pwd = Self.token(24)
        let dtls: DTLSTransport
        do {
            dtls = try DTLSTransport(identity: identity, peerFingerprint: fp)
        } catch {
            feed.finish()
            throw .failed("\(error)")
        }
        let session = WebRTCSession(id: id, stream: hub.name, localUfrag: ufrag, localPwd: pwd, remoteUfrag: creds.ufrag,
                                    tracks: plan.sending, feed: feed, dtls: dtls, logger: logger,
                                    counters: counters, onKeyframeRequest: { hub.requestKeyframe() }, send: send, sendAll: sendAll)
        register(session, client: client)
        admitted = false
        let answer = plan.answer(ufrag: ufrag, pwd: pwd, fingerprint: identity.fingerprint, candidates: candidates, port: port, tcpPort: tcpPort)
        logger.info("webrtc: WHEP offer answered", metadata: ["stream": "\(hub.name)", "session": "\(id)", "viewer": "\(viewer)",
                                                              "tracks": "\(plan.summary)"])
        return (id, answer)
    }

    /// A WHIP offer for `stream` (a `source: publish` stream): the SDP answer and the session's
    /// id. The publisher's media becomes the stream's source once DTLS is up.
    public func whip(offer text: String, stream: String, points: PublishPoints, publisher: String, client: String = "-") throws(OfferError) -> (id: String, answer: String) {
        let (offer, creds, fp) = try Self.read(offer: text)
        let plan = AnswerPlan.receiving(offer: offer)
        guard plan.sections.contains(where: { $0.media.kind == "video" && $0.format != nil }) else {
            throw .noCommonCodec("the offer sends no H.264 video (packetization mode 1) LiveRelay takes")
        }
        guard registry.withLock({ $0.admit(client, limit: settings.sessionsPerClient) }) else { throw .tooMany }
        var admitted = true
        defer { if admitted { registry.withLock { $0.release(client) } } }
        let id = Self.token(16)
        let source: RTPPushSource
        do {
            source = try RTPPushSource(sections: plan.receivedSections, url: "whip://\(stream)", interruptHandle: InterruptHandle())
        } catch {
            throw .failed("\(error)")
        }
        switch points.beginRTP(stream, source: source) {
        case .success: break
        case .failure(.alreadyPublishing): throw .busy
        case .failure(.unknownStream): throw .notPublishable
        case .failure(let f): throw .failed("\(f)")
        }
        let dtls: DTLSTransport
        do {
            dtls = try DTLSTransport(identity: identity, peerFingerprint: fp)
        } catch {
            source.finish()
            points.end(stream)
            throw .failed("\(error)")
        }
        let ufrag = Self.token(8), pwd = Self.token(24)
        let session = WebRTCSession(id: id, stream: stream, localUfrag: ufrag, localPwd: pwd, remoteUfrag: creds.ufrag,
                                    tracks: [:], feed: nil, publisher: source,
                                    publisherVideoPayloadType: plan.sections.first { $0.media.kind == "video" }?.format?.payloadType ?? -1,
                                    dtls: dtls, logger: logger, counters: counters,
                                    onClose: { points.end(stream) }, send: send)
        source.onKeyframeRequest { [weak session] in session?.requestKeyframe() }
        if let t = plan.talkSection, let f = t.format {
            source.setTalkTarget(FieldUnitTalk(session: session, sending: WebRTCSession.Sending(payloadType: UInt8(f.payloadType & 0x7F), ssrc: t.ssrc),
                                               format: TalkFormat(encoding: "OPUS", payloadType: UInt8(f.payloadType & 0x7F), clockRate: 48_000, channels: 2)))
        }
        register(session, client: client)
        admitted = false
        logger.info("webrtc: WHIP offer answered", metadata: ["stream": "\(stream)", "session": "\(id)", "publisher": "\(publisher)",
                                                              "tracks": "\(plan.summary)"])
        return (id, plan.answer(ufrag: ufrag, pwd: pwd, fingerprint: identity.fingerprint, candidates: candidates, port: port, tcpPort: tcpPort))
    }

    /// A talker's offer (push-to-talk, `POST /streams/NAME/talk`): its Opus audio, decrypted,
    /// handed to `receive` (the talk session) until the session ends, when `onClose` runs.
    public func talk(offer text: String, stream: String, id: String, talker: String, client: String = "-",
                     receive: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void) throws(OfferError) -> (id: String, answer: String) {
        let (offer, creds, fp, plan) = try Self.talkPlan(offer: text)
        guard registry.withLock({ $0.admit(client, limit: settings.sessionsPerClient) }) else { throw .tooMany }
        var admitted = true
        defer { if admitted { registry.withLock { $0.release(client) } } }
        let dtls: DTLSTransport
        do {
            dtls = try DTLSTransport(identity: identity, peerFingerprint: fp)
        } catch {
            throw .failed("\(error)")
        }
        let ufrag = Self.token(8), pwd = Self.token(24)
        let session = WebRTCSession(id: id, stream: stream, localUfrag: ufrag, localPwd: pwd, remoteUfrag: creds.ufrag,
                                    tracks: [:], feed: nil, receiver: receive, dtls: dtls, logger: logger, counters: counters,
                                    onClose: onClose, send: send)
        register(session, client: client)
        admitted = false
        logger.info("webrtc: talk offer answered", metadata: ["stream": "\(stream)", "session": "\(id)", "talker": "\(talker)", "tracks": "\(plan.summary)"])
        return (id, plan.answer(ufrag: ufrag, pwd: pwd, fingerprint: identity.fingerprint, candidates: candidates, port: port, tcpPort: tcpPort))
    }

    /// Whether `text` is a talk offer LiveRelay takes (asked before the floor is given).
    public static func checkTalk(offer text: String) throws(OfferError) {
        _ = try talkPlan(offer: text)
    }

    static func talkPlan(offer text: String) throws(OfferError) -> (SessionDescription, (ufrag: String, pwd: String), String, AnswerPlan) {
        let (offer, creds, fp) = try read(offer: text)
        let plan = AnswerPlan.talking(offer: offer)
        guard plan.sections.contains(where: { $0.format != nil }) else {
            throw .noCommonCodec("the offer sends no Opus audio (a=sendonly or sendrecv) to talk with")
        }
        return (offer, creds, fp, plan)
    }

    /// A WHIP publisher's talk path: the operators' Opus, sent on its own session.
    final class FieldUnitTalk: TalkTarget {
        weak let session: WebRTCSession?
        let sending: WebRTCSession.Sending
        let talkFormat: TalkFormat

        init(session: WebRTCSession, sending: WebRTCSession.Sending, format: TalkFormat) {
            self.session = session
            self.sending = sending
            talkFormat = format
        }

        var isClosed: Bool { session?.isClosed ?? true }
        func sendTalk(_ rtp: [UInt8]) -> Bool { session?.sendTalk(rtp, as: sending) ?? false }
    }

    /// An offer's ICE credentials and DTLS fingerprint (those of its first section, which
    /// bundles the others).
    static func read(offer text: String) throws(OfferError) -> (SessionDescription, (ufrag: String, pwd: String), String) {
        guard let offer = SessionDescription(parsing: text) else { throw .badOffer("not a session description with media") }
        guard let m0 = offer.media.first, let creds = offer.credentials(m0) else { throw .badOffer("no ICE credentials (a=ice-ufrag, a=ice-pwd)") }
        guard let fp = offer.fingerprint(m0), fp.hasPrefix("sha-256 ") else { throw .badOffer("no sha-256 DTLS fingerprint") }
        return (offer, creds, fp)
    }

    /// Frames a TCP peer did not read in time, dropped.
    public var tcpDrops: Int { tcp.dropped.load(ordering: .relaxed) }

    /// A new session findable by its ICE username and id, counted for its client; its sender runs.
    private func register(_ session: WebRTCSession, client: String) {
        registry.withLock { r in
            r.byUfrag[session.localUfrag] = session
            r.byID[session.id] = session
            r.clientOf[session.id] = client
        }
        Task { await session.run() }
    }

    /// What a `DELETE` names: a viewer's, a publisher's or a talker's session.
    public enum SessionKind: Sendable { case whep, whip, talk }

    /// Ends a session (`DELETE` on its `Location`); false when there is none of that kind for
    /// that stream.
    public func end(id: String, stream: String, kind: SessionKind) -> Bool {
        guard let s = registry.withLock({ r -> WebRTCSession? in
            guard let s = r.byID[id], s.stream == stream, s.kind == kind else { return nil }
            Self.remove(s, from: &r)
            return s
        }) else { return false }
        s.close()
        return true
    }

    /// A new session's id (a talk's is made before its session, to name it in events).
    public static func sessionID() -> String { token(16) }

    private static func remove(_ s: WebRTCSession, from r: inout Registry) {
        guard r.byID[s.id] != nil else { return }
        if let c = r.clientOf.removeValue(forKey: s.id) { r.release(c) }
        r.byID[s.id] = nil
        r.byUfrag[s.localUfrag] = nil
        for (a, v) in r.byAddress where v === s { r.byAddress[a] = nil }
    }

    private func tick() {
        let all = registry.withLock { Array($0.byID.values) }
        for s in all where s.tick() {
            registry.withLock { Self.remove(s, from: &$0) }
            s.close()
            logger.info("webrtc: session ended", metadata: ["stream": "\(s.stream)", "session": "\(s.id)"])
        }
    }

    /// One datagram on the shared port, or one frame from an ICE-TCP connection (RFC 7983's
    /// demultiplexing by first byte).
    func receive(_ bytes: [UInt8], from address: PeerAddress) {
        guard let first = bytes.first else { return }
        switch first {
        case 0...3:
            stun(bytes, from: address)
        case 20...63:
            guard let s = registry.withLock({ $0.byAddress[address] }) else { return refuse() }
            s.dtls(bytes)
        case 128...191:
            guard let s = registry.withLock({ $0.byAddress[address] }) else { return refuse() }
            if RTCPMessage.isRTCP(bytes) { s.rtcp(bytes) } else { s.rtp(bytes) }
        default:
            refuse()
        }
    }

    private func refuse(_ why: @autoclosure () -> String = "no session at this address") {
        logger.debug("webrtc: datagram refused", metadata: ["why": "\(why())"])
    }

    private func stun(_ bytes: [UInt8], from address: PeerAddress) {
        guard let m = STUNMessage(parsing: bytes) else { return refuse("not STUN") }
        guard m.type == STUNMessage.bindingRequest, m.fingerprintMatches(bytes), let user = m.username else {
            return refuse("not a Binding request with a good FINGERPRINT and a USERNAME")
        }
        let parts = user.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let s = registry.withLock({ $0.byUfrag[String(parts[0])] }), String(parts[1]) == s.remoteUfrag,
              let covered = m.integrityInput(bytes), let mac = m.attribute(STUNMessage.Attribute.messageIntegrity), mac.count == 20 else {
            return refuse("unknown ICE username")
        }
        let key = SymmetricKey(data: Array(s.localPwd.utf8))
        guard HMAC<Insecure.SHA1>.isValidAuthenticationCode(mac, authenticating: covered, using: key) else { return refuse("MESSAGE-INTEGRITY does not verify") }
        let nominated = m.attribute(STUNMessage.Attribute.useCandidate) != nil
        logger.debug("webrtc: ICE check", metadata: ["from": "\(address)", "nominated": "\(nominated)"])
        if s.checked(from: address, nominated: nominated) {
            registry.withLock { r in
                for (a, v) in r.byAddress where v === s { r.byAddress[a] = nil }
                r.byAddress[address] = s
            }
        }
        guard let ip = Self.ipBytes(address.socketAddress), let port = address.socketAddress.port else { return }
        let reply = STUNMessage(type: STUNMessage.bindingSuccess, transactionID: m.transactionID, attributes: [
            (STUNMessage.Attribute.xorMappedAddress, STUNMessage.xorMappedAddress(ip: ip, port: UInt16(truncatingIfNeeded: port), transactionID: m.transactionID)),
        ])
        send(address, reply.serialized(integrity: { Array(HMAC<Insecure.SHA1>.authenticationCode(for: $0, using: key)) }))
    }

    static func ipBytes(_ a: SocketAddress) -> [UInt8]? {
        switch a {
        // Read by offset, not by C member: which clang module owns `sin_addr` (Glibc or NIO's
        // CNIOLinux) depends on build order, and member import visibility then refuses it.
        // Linux layouts: sockaddr_in is family(2) port(2) addr(4); sockaddr_in6 is family(2)
        // port(2) flowinfo(4) addr(16).
        case .v4(let v):
            return withUnsafeBytes(of: v.address) { Array($0[4..<8]) }
        case .v6(let v):
            return withUnsafeBytes(of: v.address) { Array($0[8..<24]) }
        default:
            return nil
        }
    }

    /// Random letters and digits (ICE's ice-char set), from the system's CSPRNG.
    static func token(_ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var g = SystemRandomNumberGenerator()
        return String(decoding: (0..<n).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &g)] }, as: UTF8.self)
    }
}
