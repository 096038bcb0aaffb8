import Foundation
import Demux
import Logging
import MediaCore
import Mux
import NIOCore
import Relay
import Synchronization
import Wire

/// One WHEP viewer: its ICE credentials, its DTLS association and SRTP keys once they exist,
/// and the output (an `RTPFeed` of kind `webrtc`, with its own queue and freshness policy) its
/// sender drains. What arrives for it on the shared UDP port is handed here by the server.
final class WebRTCSession: @unchecked Sendable {
    // Safety: mutable state is in `state`, under its lock; the rest is immutable.

    /// How a negotiated track is sent: the payload type the offer chose and our SSRC.
    struct Sending: Sendable {
        let payloadType: UInt8
        let ssrc: UInt32
        /// The id the offer gave the playout-delay header extension, when it is sent (at 0).
        var playoutDelayID: UInt8? = nil
    }

    struct State {
        var remote: PeerAddress?
        var dtls: DTLSTransport
        var outbound: SRTPSession?
        var inbound: SRTPSession?
        var lastCheck = ContinuousClock.now
        var closed = false
        /// The last packets sent, by sequence number modulo `historySize` (each packet's own
        /// SSRC and sequence number tell a stale slot): what NACKs ask for (RFC 4585).
        /// Kept protected: a NACK is answered with the very packet again.
        var history = [ByteBuffer?](repeating: nil, count: WebRTCSession.historySize)
        /// WHIP: the publisher's video SSRC (from its packets), and when a keyframe was last asked.
        var publisherVideoSSRC: UInt32?
        var lastKeyframeRequest = ContinuousClock.now
        /// A request that came within `keyframeSpacing` of the last PLI: sent by the next tick.
        var keyframeRequestPending = false
        /// WHEP, per track: the next sequence number this viewer's packets get (continuous
        /// across what its queue skipped), and what its sender reports count.
        var sequence: [Int: UInt16] = [:]
        var reports: [Int: Reporting] = [:]
        /// WHIP: the next sequence number of talk sent to the publisher.
        var talkSequence = UInt16.random(in: 0...UInt16.max)
    }

    /// A track's sender-report counts (RFC 3550 §6.4.1) and when the last report went.
    struct Reporting {
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var last: ContinuousClock.Instant?
    }

    /// Sender reports go this often per track (and with a track's first packet).
    static let reportInterval = Duration.seconds(1)

    static let historySize = 1024

    let id: String
    let stream: String
    let localUfrag: String
    let localPwd: String
    let remoteUfrag: String
    let tracks: [Int: Sending]
    /// WHEP: the viewer's output, which the sender drains.
    let feed: RTPFeed?
    /// WHIP: where the publisher's media goes, and what to do when it leaves.
    let publisher: RTPPushSource?
    /// WHIP: the payload type of the publisher's video.
    let publisherVideoPayloadType: Int
    /// Talk: where the talker's RTP goes, decrypted.
    let receiver: (@Sendable ([UInt8]) -> Void)?
    private let onClose: @Sendable () -> Void
    /// WHEP: a viewer's PLI or FIR, passed to the stream (a WHIP publisher is asked in turn).
    private let onKeyframeRequest: @Sendable () -> Void
    let created = ContinuousClock.now
    private let state: Mutex<State>
    private let connected = AsyncStream<Void>.makeStream()
    private let send: @Sendable (PeerAddress, [UInt8]) -> Void
    /// Several packets at once (one wake-up of the event loop, one `sendmmsg`).
    private let sendAll: @Sendable (PeerAddress, [ByteBuffer]) -> Void
    private let allocator = ByteBufferAllocator()
    private let logger: Logger
    private let counters: WebRTCCounters

    init(id: String, stream: String, localUfrag: String, localPwd: String, remoteUfrag: String, tracks: [Int: Sending],
         feed: RTPFeed?, publisher: RTPPushSource? = nil, publisherVideoPayloadType: Int = -1,
         receiver: (@Sendable ([UInt8]) -> Void)? = nil, dtls: DTLSTransport, logger: Logger,
         counters: WebRTCCounters = WebRTCCounters(),
         onClose: @escaping @Sendable () -> Void = {}, onKeyframeRequest: @escaping @Sendable () -> Void = {},
         send: @escaping @Sendable (PeerAddress, [UInt8]) -> Void,
         sendAll: (@Sendable (PeerAddress, [ByteBuffer]) -> Void)? = nil) {
        self.sendAll = sendAll ?? { to, all in for p in all { send(to, Array(p.readableBytesView)) } }
        self.counters = counters
        self.publisher = publisher
        self.receiver = receiver
        self.onKeyframeRequest = onKeyframeRequest
        self.publisherVideoPayloadType = publisherVideoPayloadType
        self.onClose = onClose
        self.id = id
        self.stream = stream
        self.localUfrag = localUfrag
        self.localPwd = localPwd
        self.remoteUfrag = remoteUfrag
        self.tracks = tracks
        self.feed = feed
        self.logger = logger
        self.send = send
        state = Mutex(State(dtls: dtls))
    }

    /// What the session is, for the routes that end it.
    var kind: WebRTCServer.SessionKind { publisher != nil ? .whip : receiver != nil ? .talk : .whep }

    var remote: PeerAddress? { state.withLock { $0.remote } }
    var isClosed: Bool { state.withLock { $0.closed } }

    /// An ICE check that authenticated from `address`; `nominated` when it carried USE-CANDIDATE.
    /// Returns whether the selected address changed.
    func checked(from address: PeerAddress, nominated: Bool) -> Bool {
        state.withLock { s in
            s.lastCheck = .now
            guard nominated || s.remote == nil, s.remote != address else { return false }
            s.remote = address
            return true
        }
    }

    /// A DTLS record from the selected address.
    func dtls(_ bytes: [UInt8]) {
        let result: Result<(send: [UInt8], keys: SRTPKeys?), WebRTCError> = state.withLock { s in
            guard !s.closed else { return .success(([], nil)) }
            do throws(WebRTCError) {
                let r = try s.dtls.receive(bytes)
                if let keys = r.keys {
                    s.outbound = try SRTPSession(key: keys.local, outbound: true, profile: keys.profile)
                    s.inbound = try SRTPSession(key: keys.remote, outbound: false, profile: keys.profile)
                }
                return .success(r)
            } catch {
                // close() marks it closed and runs onClose (the floor, a WHIP stream's publisher).
                return .failure(error)
            }
        }
        switch result {
        case .success(let r):
            if !r.send.isEmpty, let to = remote { send(to, r.send) }
            if r.keys != nil {
                logger.info(publisher != nil ? "webrtc: publisher connected" : receiver != nil ? "webrtc: talker connected" : "webrtc: viewer connected",
                            metadata: ["stream": "\(stream)", "session": "\(id)", "over": "\(remote?.transport ?? "-")",
                                       "srtp": "\(r.keys?.profile.name ?? "-")"])
                connected.continuation.yield()
                connected.continuation.finish()
                // A viewer starts at a keyframe: a WHIP publisher is asked for one now.
                if publisher == nil && receiver == nil { onKeyframeRequest() }
            }
        case .failure(let e):
            logger.notice("webrtc: viewer refused", metadata: ["stream": "\(stream)", "session": "\(id)", "error": "\(e)"])
            close()
        }
    }

    /// Timers: DTLS retransmission; whether the session should end (no consent for 30 s, or
    /// not connected within 15 s).
    func tick() -> Bool {
        let finished = publisher?.isFinished ?? false
        let (out, pli, to, expired) = state.withLock { s -> ([UInt8], [UInt8]?, PeerAddress?, Bool) in
            let now = ContinuousClock.now
            let expired = s.closed || finished || now - s.lastCheck > .seconds(30) || (s.outbound == nil && now - created > .seconds(15))
            // A browser sends a keyframe only when asked. The stream asks when it needs one (a
            // viewer joins or loses one, an HLS segment is due); this is the floor beneath.
            let since = now - s.lastKeyframeRequest
            let due = since >= Self.keyframeFloor || (s.keyframeRequestPending && since >= Self.keyframeSpacing)
            let pli = due ? Self.pli(&s, now: now) : nil
            return (s.dtls.tick(), pli, s.remote, expired)
        }
        if let to {
            if !out.isEmpty { send(to, out) }
            if let pli {
                logger.debug("webrtc: keyframe asked of the publisher (deferred or floor)", metadata: ["stream": "\(stream)"])
                counters.keyframeRequestsSent.add(1, ordering: .relaxed)
                send(to, pli)
            }
        }
        return expired
    }

    /// WHIP: with no request from the stream, the publisher is still asked this often.
    static let keyframeFloor = Duration.seconds(5)

    /// WHIP: PLIs to the publisher are at least this far apart; one asked sooner is sent when
    /// the spacing has passed (by the tick). Chromium drops a request that comes within 300 ms
    /// of the last it honoured (libwebrtc's minimum keyframe send interval): sent at once it
    /// would be lost, and an HLS segment would wait for the next keyframe. Viewers' PLIs,
    /// however many or hostile, reach the publisher at most three times a second.
    static let keyframeSpacing = Duration.milliseconds(320)

    /// WHIP: asks the publisher for a keyframe now (the stream's request), or at the next tick.
    func requestKeyframe() {
        let (pli, to) = state.withLock { s -> ([UInt8]?, PeerAddress?) in
            let now = ContinuousClock.now
            guard now - s.lastKeyframeRequest >= Self.keyframeSpacing else {
                s.keyframeRequestPending = true
                return (nil, nil)
            }
            return (Self.pli(&s, now: now), s.remote)
        }
        logger.debug("webrtc: keyframe asked of the publisher", metadata: ["stream": "\(stream)", "sent": "\(pli != nil)"])
        if let pli, let to {
            counters.keyframeRequestsSent.add(1, ordering: .relaxed)
            send(to, pli)
        }
    }

    /// A PLI (RFC 4585) for the publisher's video, protected; nil before DTLS or its first packet.
    private static func pli(_ s: inout State, now: ContinuousClock.Instant) -> [UInt8]? {
        guard let media = s.publisherVideoSSRC, let srtp = s.outbound else { return nil }
        s.lastKeyframeRequest = now
        s.keyframeRequestPending = false
        var b: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]
        put(ownSSRC, into: &b, at: 4)
        put(media, into: &b, at: 8)
        return srtp.protectRTCP(b)
    }

    /// The SSRC LiveRelay's own RTCP (keyframe requests) is sent from.
    static let ownSSRC: UInt32 = 0x4C52_4C59

    /// SRTCP from the viewer: receiver reports, NACKs, PLIs and FIRs.
    func rtcp(_ bytes: [UInt8]) {
        var resend: [ByteBuffer] = []
        var keyframeAsked = false
        var missed = 0
        let to: PeerAddress? = state.withLock { s -> PeerAddress? in
            guard let inbound = s.inbound, let plain = inbound.unprotectRTCP(bytes) else { return nil }
            for fb in RTCPMessage.parse(plain) {
                switch fb {
                case .nack(let ssrc, let seqs):
                    for q in seqs {
                        if let p = s.history[Int(q) % Self.historySize], let got = Self.ssrcAndSequence(p), got == (ssrc, q) {
                            resend.append(p)
                        } else {
                            missed += 1
                        }
                    }
                case .pli, .fir:
                    keyframeAsked = true
                case .senderReport, .bye:
                    break
                }
            }
            return s.remote
        }
        if missed > 0 { counters.nackMissed.add(missed, ordering: .relaxed) }
        if let to, !resend.isEmpty {
            counters.nackResent.add(resend.count, ordering: .relaxed)
            sendAll(to, resend)
        }
        if keyframeAsked { counters.keyframeRequestsReceived.add(1, ordering: .relaxed) }
        // A camera's keyframes come every GOP; a WHIP publisher is asked (at most 5 a second).
        if keyframeAsked { onKeyframeRequest() }
    }

    /// WHIP: an operator's voice to the publisher (its RTP as the talk session cut it), sent as
    /// `as` says (the answer's payload type and SSRC, this session's sequence); false before
    /// DTLS or once closed.
    func sendTalk(_ rtp: [UInt8], as t: Sending) -> Bool {
        guard rtp.count >= 12 else { return false }
        var buffer = allocator.buffer(capacity: rtp.count + SRTPSession.trailer)
        let to: PeerAddress? = state.withLock { s in
            guard !s.closed, let srtp = s.outbound, let remote = s.remote else { return nil }
            let seq = s.talkSequence
            s.talkSequence &+= 1
            return Self.protect(rtp, as: t, sequence: seq, srtp: srtp, into: &buffer) ? remote : nil
        }
        guard let to else { return false }
        sendAll(to, [buffer])
        return true
    }

    /// SRTP from a publisher (decrypted and handed to the stream's source) or a talker (to its
    /// talk session).
    func rtp(_ bytes: [UInt8]) {
        guard publisher != nil || receiver != nil else { return }
        let plain: [UInt8]? = state.withLock { s in
            guard let p = s.inbound?.unprotect(bytes) else { return nil }
            if p.count >= 12, Int(p[1] & 0x7F) == publisherVideoPayloadType {
                s.publisherVideoSSRC = UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
            }
            return p
        }
        guard let plain else { return }
        if let publisher { publisher.push(plain, arrival: DispatchTime.now().uptimeNanoseconds) } else { receiver?(plain) }
    }

    /// Sends the feed's RTP until the session ends: waits for DTLS, then drains the output.
    /// A publisher's session has nothing to send: it waits for its end.
    func run() async {
        for await _ in connected.stream { break }
        guard let feed else { return }
        while !isClosed, let piece = await feed.nextPiece() {
            let now = ContinuousClock.now
            let (out, to) = state.withLock { s -> ([ByteBuffer], PeerAddress?) in
                guard !s.closed, let srtp = s.outbound else { return ([], nil) }
                var out: [ByteBuffer] = []
                out.reserveCapacity(piece.datagrams.count + 1)
                var reportsDue: [(track: Int, rtpTime: UInt32)] = []
                for d in piece.datagrams {
                    guard let t = tracks[d.track], d.bytes.count >= 12 else { continue }
                    let seq = s.sequence[d.track] ?? UInt16.random(in: 0...UInt16.max)
                    s.sequence[d.track] = seq &+ 1
                    // The packet 1,024 back in this slot went long ago: its buffer is reused
                    // (no allocation once the history is full).
                    let slot = Int(seq) % Self.historySize
                    var buffer = s.history[slot] ?? allocator.buffer(capacity: d.bytes.count + 8 + SRTPSession.trailer)
                    s.history[slot] = nil
                    guard Self.protect(d.bytes, as: t, sequence: seq, srtp: srtp, into: &buffer) else { continue }
                    s.history[slot] = buffer
                    out.append(buffer)
                    var r = s.reports[d.track] ?? Reporting()
                    r.packets &+= 1
                    r.octets &+= UInt32(truncatingIfNeeded: d.bytes.count - 12)
                    if r.last.map({ now - $0 >= Self.reportInterval }) ?? true {
                        r.last = now
                        reportsDue.removeAll { $0.track == d.track }
                        reportsDue.append((d.track, Self.rtpTime(d.bytes)))
                    }
                    s.reports[d.track] = r
                }
                for due in reportsDue {
                    guard let t = tracks[due.track], let r = s.reports[due.track] else { continue }
                    let sr = Self.senderReport(ssrc: t.ssrc, wallMicros: piece.captureWallMicros, rtpTime: due.rtpTime, packets: r.packets, octets: r.octets)
                    if let p = srtp.protectRTCP(sr) {
                        out.append(allocator.buffer(bytes: p))
                        counters.senderReports.add(1, ordering: .relaxed)
                    }
                }
                return (out, s.remote)
            }
            guard let to, !out.isEmpty else { continue }
            sendAll(to, out)
        }
        close()
    }

    /// One of the cut's RTP packets as this viewer sends it, protected, written over `buffer`:
    /// the answer's payload type, this viewer's SSRC and `sequence`, the playout-delay extension
    /// (RFC 8285 one-byte form: min 0, max 0) where negotiated. False when libsrtp refuses it.
    static func protect(_ rtp: [UInt8], as t: Sending, sequence seq: UInt16, srtp: SRTPSession, into buffer: inout ByteBuffer) -> Bool {
        let extend = t.playoutDelayID != nil && rtp[0] & 0x1F == 0
        let length = rtp.count + (extend ? 8 : 0)
        buffer.clear()
        var ok = false
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length + SRTPSession.trailer) { out in
            rtp.withUnsafeBytes { src in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[0..<12]))
                out[0] = extend ? rtp[0] | 0x10 : rtp[0]
                out[1] = (rtp[1] & 0x80) | (t.payloadType & 0x7F)
                out[2] = UInt8(seq >> 8)
                out[3] = UInt8(seq & 0xFF)
                out[8] = UInt8(t.ssrc >> 24)
                out[9] = UInt8((t.ssrc >> 16) & 0xFF)
                out[10] = UInt8((t.ssrc >> 8) & 0xFF)
                out[11] = UInt8(t.ssrc & 0xFF)
                var at = 12
                if extend, let id = t.playoutDelayID {
                    for (i, b) in [0xBE, 0xDE, 0x00, 0x01, id << 4 | 2, 0, 0, 0].enumerated() { out[12 + i] = b }
                    at = 20
                }
                UnsafeMutableRawBufferPointer(rebasing: out[at..<length]).copyMemory(from: UnsafeRawBufferPointer(rebasing: src[12...]))
            }
            guard let n = srtp.protect(inPlace: out, length: length) else { return 0 }
            ok = true
            return n
        }
        return ok
    }

    /// An RTP packet's timestamp (the header is there: only packets of 12 bytes or more are sent).
    static func rtpTime(_ b: [UInt8]) -> UInt32 {
        UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
    }

    /// A sender report (RFC 3550 §6.4.1): the packet's capture time on the NTP clock beside its
    /// RTP timestamp, so a player can tell how old what it shows is; and this viewer's counts.
    static func senderReport(ssrc: UInt32, wallMicros: Int64, rtpTime: UInt32, packets: UInt32, octets: UInt32) -> [UInt8] {
        // NTP counts from 1900; its fraction is 1/2^32 of a second.
        let micros = max(0, wallMicros)
        let seconds = UInt64(micros / 1_000_000) + 2_208_988_800
        let fraction = UInt64(micros % 1_000_000) << 32 / 1_000_000
        var b: [UInt8] = [0x80, 200, 0, 6]
        b.reserveCapacity(28)
        for v in [ssrc, UInt32(truncatingIfNeeded: seconds), UInt32(truncatingIfNeeded: fraction), rtpTime, packets, octets] {
            b += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
        }
        return b
    }

    func close() {
        let was = state.withLock { s in
            defer { s.closed = true }
            return s.closed
        }
        connected.continuation.finish()
        if !was {
            feed?.finish()
            publisher?.finish()
            onClose()
        }
    }

    /// An RTP packet's SSRC and sequence number (the header is there: only packets of 12 bytes
    /// or more are kept).
    static func ssrcAndSequence(_ b: ByteBuffer) -> (UInt32, UInt16)? {
        guard let seq = b.getInteger(at: b.readerIndex + 2, as: UInt16.self), let ssrc = b.getInteger(at: b.readerIndex + 8, as: UInt32.self) else { return nil }
        return (ssrc, seq)
    }

    static func put(_ v: UInt32, into b: inout [UInt8], at i: Int) {
        b[i] = UInt8(v >> 24)
        b[i + 1] = UInt8((v >> 16) & 0xFF)
        b[i + 2] = UInt8((v >> 8) & 0xFF)
        b[i + 3] = UInt8(v & 0xFF)
    }
}
