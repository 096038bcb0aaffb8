internal import CFFmpeg
import Foundation
public import MediaCore
public import Wire
import Synchronization

/// A source fed RTP packets by a session layer that received them (WebRTC's WHIP: decrypted
/// SRTP), described by the session description that session agreed: H.264 (RFC 6184), Opus
/// (RFC 7587) and G.711 are rebuilt into packets with the same depacketizer as LiveRelay's RTSP
/// client (`RTPTrack`), one timeline per track from its RTP clock, lined up by arrival. The
/// session layer pushes from its own thread; the stream's ingest thread reads.
public final class RTPPushSource: PacketSource, KeyframeRequesting, TalkPathProviding, @unchecked Sendable {
    // Safety: everything mutable is under `condition`, or is the Mutex below.
    public private(set) var streams: [StreamInfo] = []
    public let formatName = "rtp"
    public private(set) var interruptHandle: InterruptHandle
    public let url: String

    private let condition = NSCondition()
    private let tracks: [RTPTrack]
    private let kinds: [MediaType]
    private let media: [SDPTrack]
    /// Packets ready, from `readyStart` on (taken by moving the start, not by shifting).
    private var ready: [Packet] = []
    private var readyStart = 0
    private var ended = false
    private var keyframe: RTPFrame?
    private var timelines = RTPTimelines()
    private let scratch: UnsafeMutablePointer<AVPacket>
    private let readTimeout: Double
    /// What asks the publisher for a keyframe (the WHIP session's PLI).
    private let keyframeAsker = Mutex<(@Sendable () -> Void)?>(nil)
    /// Where talk to the publisher goes (its WebRTC session, when it receives audio).
    private let talk = Mutex<(any TalkTarget)?>(nil)

    /// Why a description cannot be taken.
    public struct Unsupported: Error, CustomStringConvertible {
        public let description: String
    }

    /// `sections`: one media section per track, each with the one payload format agreed (a WHIP
    /// session's accepted offer, as parsed: no text is written to be read again).
    public init(sections: [SessionDescription.Media], url: String, readTimeout: Double = 10, interruptHandle: InterruptHandle) throws(Unsupported) {
        var tracks: [RTPTrack] = [], kinds: [MediaType] = [], media: [SDPTrack] = []
        for m in sections.map(SDPTrack.init) {
            let format: RTPDepayloadFormat
            switch (m.kind, m.encoding) {
            case ("video", "H264"): format = .h264
            case ("video", "H265"): format = .h265(donl: m.h265UsesDONL)
            case ("audio", "OPUS"): format = .opus
            case ("audio", "PCMU"), ("audio", "PCMA"): format = .g711
            default: continue
            }
            tracks.append(RTPTrack(streamIndex: tracks.count, format: format, payloadType: m.payloadType, clockRate: max(1, m.clockRate),
                                   queueSize: 64, maxDelay: 0.1))
            kinds.append(m.kind == "video" ? .video : .audio)
            media.append(m)
        }
        guard kinds.contains(.video) else { throw Unsupported(description: "no H.264 or H.265 video in the session") }
        guard let pkt = av_packet_alloc() else { throw Unsupported(description: "out of memory") }
        scratch = pkt
        self.tracks = tracks
        self.kinds = kinds
        self.media = media
        self.url = url
        self.readTimeout = readTimeout
        self.interruptHandle = interruptHandle
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = scratch
        av_packet_free(&p)
    }

    /// Sets what asks the publisher for a keyframe.
    public func onKeyframeRequest(_ ask: @escaping @Sendable () -> Void) {
        keyframeAsker.withLock { $0 = ask }
    }

    /// Sets where talk to the publisher goes.
    public func setTalkTarget(_ target: any TalkTarget) {
        talk.withLock { $0 = target }
    }

    public var talkTarget: (any TalkTarget)? { talk.withLock { $0 } }

    public func requestKeyframe() {
        keyframeAsker.withLock { $0 }?()
    }

    /// One RTP packet as received (any payload type of the session's; others are ignored).
    public func push(_ rtp: [UInt8], arrival: UInt64) {
        guard rtp.count >= 12 else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !ended else { return }
        let pt = Int(rtp[1] & 0x7F)
        guard let i = tracks.firstIndex(where: { $0.payloadType == pt }) else { return }
        let t = tracks[i]
        rtp.withUnsafeBytes { t.receive($0, arrival: arrival) }
        t.releaseDue(now: arrival)
        let frames = t.frames
        t.frames.removeAll(keepingCapacity: true)
        for f in frames { packet(of: f, track: i) }
        if ready.count > readyStart || keyframe != nil { condition.broadcast() }
    }

    /// The reading thread's handle: stopping the stream interrupts the probe and reads.
    public func adopt(_ handle: InterruptHandle) {
        condition.lock()
        interruptHandle = handle
        condition.unlock()
    }

    /// Whether the sender left.
    public var isFinished: Bool {
        condition.lock()
        defer { condition.unlock() }
        return ended
    }

    /// The sender left: reads end once what arrived is taken.
    public func finish() {
        condition.lock()
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the first keyframe (with its parameter sets) and takes the streams from it.
    public func probe(timeout: Double) throws(IngestError) {
        let until = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while keyframe == nil {
            if ended || interruptHandle.isInterrupted { throw IngestError(.failed, source: url, stage: RTSPSource.probingStage, detail: "the publisher left") }
            if Date() >= until { throw IngestError(.timedOut, source: url, stage: RTSPSource.probingStage, detail: "no keyframe within \(Int(timeout)) s") }
            _ = condition.wait(until: min(until, Date().addingTimeInterval(0.2)))
        }
        var found: [StreamInfo] = []
        for (i, t) in tracks.enumerated() {
            let tb = TimeBase(1, Int32(clamping: t.clockRate))
            if kinds[i] == .video {
                let v = try RTSPStreamParameters.video(t.inBand.syntax, keyframe: keyframe!.data, extradata: t.inBand.annexB, source: url)
                found.append(StreamInfo(index: i, timeBase: tb, frameRate: v.frameRate, parameters: v.parameters))
            } else {
                found.append(StreamInfo(index: i, timeBase: tb, frameRate: nil, parameters: try RTSPStreamParameters.audio(media[i], format: t.format, source: url)))
            }
        }
        streams = found
    }

    public func readPacket() throws -> Packet? {
        let until = Date().addingTimeInterval(readTimeout)
        condition.lock()
        defer { condition.unlock() }
        while ready.count == readyStart {
            if ended { return nil }
            if interruptHandle.isInterrupted { throw IngestError(.stopped, source: url, stage: "reading", detail: "stopped") }
            if Date() >= until {
                // The publisher is gone for this stream: its session ends too.
                ended = true
                throw IngestError(.timedOut, source: url, stage: "reading", detail: "no media from the publisher for \(Int(readTimeout)) s")
            }
            _ = condition.wait(until: min(until, Date().addingTimeInterval(0.2)))
        }
        let p = ready[readyStart]
        readyStart += 1
        if readyStart >= 256 && readyStart * 2 >= ready.count {
            ready.removeFirst(readyStart)
            readyStart = 0
        }
        return p
    }

    private func packet(of f: RTPFrame, track i: Int) {
        let t = tracks[i], kind = kinds[i]
        let pts = timelines.pts(track: i, timestamp: f.timestamp, arrival: f.arrivalNanos, clockRate: t.clockRate)
        if kind == .video && keyframe == nil {
            guard f.isKey else { return }
            keyframe = f
        }
        let count = f.data.count
        guard count > 0, av_new_packet(scratch, Int32(count)) >= 0 else { return }
        f.data.withUnsafeBytes { _ = memcpy(scratch.pointee.data, $0.baseAddress!, count) }
        scratch.pointee.pts = pts
        scratch.pointee.dts = pts
        scratch.pointee.stream_index = Int32(i)
        if f.isKey { scratch.pointee.flags = AV_PKT_FLAG_KEY }
        if t.format == .opus { scratch.pointee.duration = 960 }
        if t.format == .g711 { scratch.pointee.duration = Int64(count) }
        guard let p = try? Packet(movingFrom: scratch, timeBase: TimeBase(1, Int32(clamping: t.clockRate)), mediaType: kind, arrivalNanos: f.arrivalNanos) else {
            av_packet_unref(scratch)
            return
        }
        if f.lostBefore > 0 { p.lostBefore = f.lostBefore }
        // At most a few seconds held for a reader that stalled.
        if ready.count - readyStart > 2048 {
            ready.removeFirst(ready.count - 2048)
            readyStart = 0
        }
        ready.append(p)
    }
}
