import Access
import Logging
import Wire
import Relay
import Mux
import MediaCore
import NIOCore
import NIOPosix
import Foundation
import Synchronization

/// One client's state: its session, the stream it described, its transports, its sender.
/// Its requests are handled one after another by one task; the sender is a task of its own.
final class RTSPServerSession: @unchecked Sendable {
    // Safety: every mutable property is touched only by `serve`'s task (requests are handled in
    // order), except `playing`, an atomic the event loop reads.
    let server: RTSPServer
    let channel: any Channel
    let address: String
    let localHost: String
    private var sessionID: String?
    private var stream: String?
    private var description: RTSPDescription?
    private var transports: [Int: RTSPTransport] = [:]
    private var udp: (rtp: any Channel, rtcp: any Channel)?
    private var sender: Task<Void, Never>?
    private var feed: RTPFeed?
    private let playing = Atomic<Bool>(false)
    private let overUDP = Atomic<Bool>(false)
    /// When the client was last heard from: a request, or a packet on the session's UDP ports.
    private let lastHeard = Atomic<UInt64>(MonotonicClock.nanoseconds())
    private static let serial = Atomic<Int>(0)

    init(server: RTSPServer, channel: any Channel, address: String, localHost: String) {
        self.server = server
        self.channel = channel
        self.address = address
        self.localHost = localHost
    }

    var isPlaying: Bool { playing.load(ordering: .relaxed) }

    func heard() { lastHeard.store(MonotonicClock.nanoseconds(), ordering: .relaxed) }

    /// A UDP session whose client sent nothing (no request, no RTCP report) for this long.
    func silentOverUDP(seconds: Double) -> Bool {
        overUDP.load(ordering: .relaxed) && MonotonicClock.nanoseconds() &- lastHeard.load(ordering: .relaxed) > PeerNumber.nanoseconds(seconds)
    }

    func serve(_ requests: AsyncStream<RTSPRequest>) async {
        for await request in requests {
            let response = await respond(request)
            let bytes = response.encoded(cseq: request.cseq)
            do {
                try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
            } catch { break }
            if request.method == "PLAY" && response.status == 200 { startSending() }
            if request.method == "TEARDOWN" { break }
        }
        await end()
        try? await channel.close()
    }

    // MARK: requests

    private func respond(_ r: RTSPRequest) async -> RTSPResponse {
        switch r.method {
        case "OPTIONS":
            return RTSPResponse(200, "OK", headers: [("Public", "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER")])
        case "DESCRIBE": return await describe(r)
        case "SETUP": return await setup(r)
        case "PLAY": return await play(r)
        case "PAUSE":
            guard sessionMatches(r) else { return RTSPResponse(454, "Session Not Found") }
            await stopSending()
            return RTSPResponse(200, "OK", headers: sessionHeader)
        case "TEARDOWN":
            await end()
            return RTSPResponse(200, "OK")
        case "GET_PARAMETER", "SET_PARAMETER":
            return RTSPResponse(200, "OK", headers: sessionHeader)
        default:
            return RTSPResponse(405, "Method Not Allowed", headers: [("Allow", "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER")])
        }
    }

    /// Which stream (and track) a request URI names: `rtsp://host:port/{stream}[/sub][/streamid=N]`,
    /// or the path alone; `/sub` is the stream's sub stream (`NAME_sub`). The URI is read by
    /// Wire's `RTSPURL`, as the client reads a camera's.
    static func target(_ uri: String) -> (stream: String, track: Int?)? {
        guard let path = RTSPURL.requestPath(uri) else { return nil }
        var parts = path.split(separator: "/")
        var track: Int?
        if let last = parts.last, last.hasPrefix("streamid=") {
            guard let n = Int(last.dropFirst("streamid=".count)), (0..<64).contains(n) else { return nil }
            track = n
            parts.removeLast()
        }
        let sub = parts.count == 2 && parts[1] == Substring(Configuration.Substream.suffix)
        guard parts.count == 1 || sub, let segment = parts.first, let name = RTSPURL.percentDecoded(segment), !name.isEmpty else { return nil }
        return (sub ? Configuration.Substream.streamName(name) : name, track)
    }

    /// The stream's hub if it exists and this client may read it; else the response to give.
    /// A name in another case finds the one stream it can mean (VLC's SAT>IP module lowercases
    /// the whole URL).
    private func access(_ r: RTSPRequest, _ given: String) async -> Result<StreamHub, RTSPResponseError> {
        let hubs = server.engine.hubs
        var name = given
        if hubs[given] == nil {
            let same = hubs.keys.filter { $0.lowercased() == given.lowercased() }
            if same.count == 1 { name = same[0] }
        }
        // Permission first, existence second: a client that may not read a name learns nothing
        // of whether a stream by that name exists.
        let credentials: Authorizer.Credentials = r.header("Authorization").map { .header($0) } ?? .none
        switch await server.authorizer.authorize(credentials, .read, stream: name, door: .rtsp, from: address) {
        case .allowed: break
        case .unauthorized: return .failure(RTSPResponseError(RTSPResponse(401, "Unauthorized", headers: [("WWW-Authenticate", "Basic realm=\"LiveRelay\"")])))
        case .forbidden: return .failure(RTSPResponseError(RTSPResponse(403, "Forbidden")))
        case .limited: return .failure(RTSPResponseError(RTSPResponse(429, "Too Many Requests")))
        }
        guard let hub = hubs[name] else { return .failure(RTSPResponseError(RTSPResponse(404, "Not Found"))) }
        return .success(hub)
    }

    private func describe(_ r: RTSPRequest) async -> RTSPResponse {
        guard let (name, _) = Self.target(r.uri) else { return RTSPResponse(404, "Not Found") }
        let hub: StreamHub
        switch await access(r, name) {
        case .success(let h): hub = h
        case .failure(let e): return e.response
        }
        guard let d = await waitForDescription(hub, format: .perTrack) else {
            return RTSPResponse(503, "Service Unavailable", headers: [("Retry-After", "2")])
        }
        stream = hub.name
        description = d
        return RTSPResponse(200, "OK", headers: [("Content-Type", "application/sdp"), ("Content-Base", Self.base(r.uri))], body: d.sdp)
    }

    /// The request's URL without its query, ending in `/`: what track controls are relative to.
    static func base(_ uri: String) -> String {
        var base = uri
        if let q = base.firstIndex(of: "?") { base = String(base[..<q]) }
        if !base.hasSuffix("/") { base += "/" }
        return base
    }

    /// The stream's session description; a stream not connected yet (on demand, or
    /// connecting) is asked for and waited for, up to 10 s.
    private func waitForDescription(_ hub: StreamHub, format: RTPPayloadFormat) async -> RTSPDescription? {
        let end = MonotonicClock.nanoseconds() + 10_000_000_000
        while true {
            hub.demand()
            do {
                if let d = try RTPFeed.describe(hub, format: format) { return d }
            } catch {
                server.logger.warning("rtsp: no session description", metadata: ["stream": "\(hub.name)", "error": "\(error)"])
                return nil
            }
            if MonotonicClock.nanoseconds() > end { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func sessionMatches(_ r: RTSPRequest) -> Bool {
        guard let id = sessionID else { return false }
        guard let given = r.header("Session") else { return true }
        return RTSPSessionHeader(parsing: given)?.id == id
    }

    private var sessionHeader: [(String, String)] {
        sessionID.map { [("Session", "\($0);timeout=\(server.sessionTimeout)")] } ?? []
    }

    private func setup(_ r: RTSPRequest) async -> RTSPResponse {
        guard let (name, trackGiven) = Self.target(r.uri) else { return RTSPResponse(404, "Not Found") }
        if sessionID != nil, !sessionMatches(r) { return RTSPResponse(454, "Session Not Found") }
        if isPlaying { return RTSPResponse(455, "Method Not Valid in This State") }
        let hub: StreamHub
        switch await access(r, name) {
        case .success(let h): hub = h
        case .failure(let e): return e.response
        }
        if let s = stream, s != hub.name, sessionID != nil { return RTSPResponse(459, "Aggregate Operation Not Allowed") }
        // SETUP of the stream itself with no DESCRIBE before it: a client that knows no session
        // description (VLC without live555, SAT>IP style) gets every track in one MPEG-TS.
        let satIP = description == nil && trackGiven == nil
        if description == nil || stream != hub.name {
            guard let d = await waitForDescription(hub, format: satIP ? .mpegTS : .perTrack) else { return RTSPResponse(503, "Service Unavailable") }
            description = d
            stream = hub.name
        }
        let tracks = description?.tracks.count ?? 0
        let track = trackGiven ?? 0
        guard track < tracks else { return RTSPResponse(404, "Not Found") }
        guard let header = r.header("Transport"), let transport = RTSPTransport.choose(header, track: track) else {
            return RTSPResponse(461, "Unsupported Transport")
        }
        var reply: String
        switch transport {
        case .interleaved(let a, let b):
            reply = "RTP/AVP/TCP;unicast;interleaved=\(a)-\(b)"
        case .udp(let a, let b):
            guard let ports = await udpPorts() else { return RTSPResponse(500, "Internal Server Error") }
            reply = "RTP/AVP;unicast;client_port=\(a)-\(b);server_port=\(ports.rtp)-\(ports.rtcp)"
        }
        transports[track] = transport
        if case .udp = transport { overUDP.store(true, ordering: .relaxed) }
        if sessionID == nil { sessionID = Self.newSessionID() }
        // An MPEG-TS session's client has seen no SDP: Content-Base tells it where PLAY goes.
        let base: [(String, String)] = description?.format == .mpegTS && trackGiven == nil ? [("Content-Base", Self.base(r.uri))] : []
        return RTSPResponse(200, "OK", headers: [("Transport", reply)] + sessionHeader + base)
    }

    static func newSessionID() -> String {
        let n = serial.add(1, ordering: .relaxed).newValue
        return String(UInt64.random(in: 1...UInt64.max) ^ UInt64(n), radix: 16, uppercase: true)
    }

    /// This session's UDP sockets (RTP, RTCP), bound on the address the client reached.
    private func udpPorts() async -> (rtp: Int, rtcp: Int)? {
        if udp == nil {
            let bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { [weak self] channel in
                    // Receiver reports (and NAT keep-alives) say the client is still there.
                    let client = self
                    return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(HeardHandler { client?.heard() }) }
                }
            do {
                let rtp = try await bootstrap.bind(host: localHost, port: 0).get()
                do {
                    let rtcp = try await bootstrap.bind(host: localHost, port: 0).get()
                    udp = (rtp, rtcp)
                } catch {
                    try? await rtp.close()
                    throw error
                }
            } catch {
                server.logger.warning("rtsp: no UDP ports", metadata: ["error": "\(error)"])
                return nil
            }
        }
        guard let u = udp, let a = u.rtp.localAddress?.port, let b = u.rtcp.localAddress?.port else { return nil }
        return (a, b)
    }

    private func play(_ r: RTSPRequest) async -> RTSPResponse {
        guard sessionMatches(r), let name = stream, !transports.isEmpty else { return RTSPResponse(454, "Session Not Found") }
        switch await access(r, name) {
        case .success(let hub):
            if feed == nil {
                let outputName = "rtsp-\(sessionID ?? "0")"
                do {
                    guard let f = try RTPFeed.attach(hub: hub, name: outputName, format: description?.format ?? .perTrack),
                          f.description.tracks.count == description?.tracks.count else {
                        return RTSPResponse(503, "Service Unavailable")
                    }
                    feed = f
                } catch {
                    return RTSPResponse(503, "Service Unavailable")
                }
            }
            return RTSPResponse(200, "OK", headers: sessionHeader + [("Range", "npt=0.000-")])
        case .failure(let e):
            return e.response
        }
    }

    // MARK: sending

    private func startSending() {
        guard sender == nil, let feed else { return }
        playing.store(true, ordering: .relaxed)
        server.sessionStarted()
        let transports = transports, channel = channel, udp = udp, stall = server.stallTimeout
        let remote = transports.values.contains { if case .udp = $0 { return true } else { return false } }
            ? try? SocketAddress(ipAddress: address, port: 0) : nil
        server.logger.info("rtsp: playing", metadata: ["stream": "\(stream ?? "")", "client": "\(address)",
                                                      "transport": "\(remote == nil ? "tcp" : "udp")"])
        sender = Task {
            while !Task.isCancelled, let datagrams = await feed.next() {
                // Interleaved: every RTP packet of this media packet in one buffer, one write
                // (one hop to the event loop per media packet, not per RTP packet).
                var interleaved: ByteBuffer?
                for d in datagrams {
                    switch transports[d.track] {
                    case .interleaved(let rtp, let rtcp):
                        if interleaved == nil { interleaved = channel.allocator.buffer(capacity: datagrams.reduce(0) { $0 + $1.bytes.count + 4 }) }
                        interleaved!.writeInteger(UInt8(ascii: "$"))
                        interleaved!.writeInteger(d.isRTCP ? rtcp : rtp)
                        interleaved!.writeInteger(UInt16(d.bytes.count))
                        interleaved!.writeBytes(d.bytes)
                    case .udp(let rtpPort, let rtcpPort):
                        guard let udp, var to = remote else { continue }
                        to.port = d.isRTCP ? rtcpPort : rtpPort
                        let out = d.isRTCP ? udp.rtcp : udp.rtp
                        out.writeAndFlush(AddressedEnvelope(remoteAddress: to, data: out.allocator.buffer(bytes: d.bytes)), promise: nil)
                    case nil:
                        continue    // a track the client did not set up
                    }
                }
                guard let interleaved else { continue }
                let last = channel.write(interleaved)
                channel.flush()
                // A client that stops reading: skip it to a keyframe after 100 ms of waiting,
                // close it after the stall timeout.
                let t0 = MonotonicClock.nanoseconds()
                let timer = channel.eventLoop.scheduleTask(in: stall) { channel.close(promise: nil) }
                do { try await last.get() } catch { timer.cancel(); break }
                timer.cancel()
                if MonotonicClock.nanoseconds() - t0 > 100_000_000 { feed.handle.fellBehind() }
            }
            // The stream ended or came back with other tracks: the client starts over.
            if !Task.isCancelled { channel.close(promise: nil) }
        }
    }

    private func stopSending() async {
        playing.store(false, ordering: .relaxed)
        sender?.cancel()
        feed?.handle.detach()
        await sender?.value
        sender = nil
        feed = nil
    }

    private func end() async {
        await stopSending()
        if let u = udp {
            try? await u.rtp.close()
            try? await u.rtcp.close()
            udp = nil
        }
        transports = [:]
        sessionID = nil
    }
}

/// Notes that a datagram came from the client; its content is not needed.
final class HeardHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let heard: @Sendable () -> Void
    init(_ heard: @escaping @Sendable () -> Void) { self.heard = heard }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { heard() }
}

struct RTSPResponseError: Error {
    let response: RTSPResponse
    init(_ r: RTSPResponse) { response = r }
}
