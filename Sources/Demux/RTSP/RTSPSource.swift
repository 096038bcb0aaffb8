internal import CFFmpeg
public import MediaCore
public import Logging
import Wire
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

/// LiveRelay's own RTSP client (RFC 2326) for H.264 and H.265 cameras, with AAC or G.711 audio: the RTSP
/// exchange, RTP over UDP or interleaved in the TCP connection, put back in order within a
/// bounded wait, and pictures rebuilt from RTP (RFC 6184, RFC 7798).
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
    public internal(set) var streams: [StreamInfo] = []
    public let formatName = "rtsp"
    public internal(set) var transportUsed: SourceOptions.Transport?

    // The session's state: internal, for the exchange (`RTSPSource+Exchange`) and the packet
    // building (`RTSPSource+Packets`) in files of their own; nothing outside this type uses it.
    let address: RTSPURL
    let logger: Logger
    var link: TCPLink?
    var cseq = 0
    var auth: RTSPClientCredentials?
    var session: String?
    var playURL = ""
    var keepaliveMethod = "OPTIONS"
    var keepaliveInterval: UInt64 = 30_000_000_000
    var nextKeepalive: UInt64 = .max
    var nextReport: UInt64 = .max
    var tracks: [RTPTrack] = []
    var kinds: [MediaType] = []
    var timeBases: [TimeBase] = []
    var udp: [UDPPair] = []
    /// Interleaved channel → (track, is RTCP).
    var channels: [UInt8: (track: Int, control: Bool)] = [:]
    var polls: [pollfd] = []
    var ready: [Packet] = []
    private var readyStart = 0
    var timelines = RTPTimelines()
    var damagedUntilKeyframe = false
    /// The last video timestamps handed on (a repeated picture is told from a B-frame by them).
    var recentVideoPTS: [Int64] = []
    var recentNext = 0
    var ended = false
    let scratch: UnsafeMutablePointer<AVPacket>
    /// Set during the probe: the first keyframe (with parameter sets) and a second picture.
    var probeKeyframe: RTPFrame?
    var probeSecondPTS: Int64?
    var probeFirstPTS: Int64?
    var probeEvent = false
    var serverSource: String?
    /// Whether DESCRIBE asks for the ONVIF backchannel: `options.backchannel`, until the camera
    /// refuses the requirement (then it is read without).
    var askBackchannel: Bool
    /// The camera's backchannel, once SETUP; closed with the session.
    var backchannel: Backchannel?
    var backchannelPair: UDPPair?
    private var datagram = [UInt8](repeating: 0, count: 65536)


    static let probingStage = "probing streams"

    // MARK: - Opening

    /// Opens `url` with LiveRelay's own client when it can, else with FFmpeg's RTSP demuxer.
    public static func open(url: String, options: SourceOptions, interruptHandle: InterruptHandle, logger: Logger = Logger(label: "liverelay.demux")) throws(IngestError) -> any PacketSource {
        if !options.listen && options.rtspClient == .liverelay && !FFmpegPreferred.contains(url) {
            do {
                return try RTSPSource(url: url, options: options, interruptHandle: interruptHandle, logger: logger)
            } catch let u as Unsupported {
                guard options.ffmpegFallback else { throw IngestError(.failed, source: url, stage: "opening", detail: "not supported: \(u.reason)") }
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
        // rtsps:// (TLS) is FFmpeg's: `SourceOpener` sends only rtsp:// here.
        guard let address = RTSPURL(url), address.scheme == .rtsp else {
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
        askBackchannel = options.backchannel
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
    func reset() {
        if let link, session != nil, !link.isClosed {
            try? link.send(requestBytes("TEARDOWN", url: playURL, headers: []), deadline: MonotonicClock.nanoseconds() &+ 50_000_000, interrupt: InterruptHandle())
        }
        backchannel?.close()
        backchannel = nil
        if let b = backchannelPair { close(b.rtp); close(b.rtcp) }
        backchannelPair = nil
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
        timelines = RTPTimelines()
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
    func pump(until deadline: UInt64, probing: Bool = false) throws(WireError) {
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
                    while let frame = try link.input.nextFrame() {
                        if case .interleaved(let channel, let payload) = frame { take(channel: channel, payload) }
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

    func take(channel: UInt8, _ payload: ArraySlice<UInt8>) {
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

    /// RTCP receiver reports (empty: they keep the session alive and open NAT mappings) to
    /// each track's server port, every 5 s, over UDP.
    func sendReports() {
        nextReport = MonotonicClock.nanoseconds() &+ 5_000_000_000
        guard let link else { return }
        for u in udp { u.report(to: link.peer) }
    }
}

extension RTSPSource: TalkPathProviding {
    /// The camera's backchannel, when it has one and it was asked for.
    public var talkTarget: (any TalkTarget)? { backchannel }
}

extension RTSPSource: LinkHealthReporting {
    /// Each RTP track's packets, losses, reorders and jitter since the session opened.
    public var linkHealth: LinkHealth {
        LinkHealth(tracks: tracks.map { t in
            let media = streams.indices.contains(t.streamIndex) ? streams[t.streamIndex].mediaType.rawValue : "unknown"
            return LinkHealth.Track(index: t.streamIndex, media: media, packetsReceived: t.received, packetsLost: t.totalLost,
                                    packetsReordered: t.reordered, jitter: t.jitterSeconds)
        })
    }
}
