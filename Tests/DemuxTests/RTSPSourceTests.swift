import Testing
import Foundation
import MediaCore
import Wire
@testable import Demux
import TestSupport
import Logging

/// LiveRelay's own RTSP client against a real camera (gst-rtsp-server), read side by side with
/// FFmpeg's RTSP demuxer on the same shared stream: the same pictures and audio frames, byte for
/// byte, with the same timestamps — and each picture handed on when its last packet arrives,
/// where FFmpeg's waits for the next picture to start.
@Suite(.ownThreads, .serialized) struct RTSPSourceTests {
    init() { FFmpegLog.silence() }

    struct Read {
        let data: [UInt8]
        let pts: Int64
        let key: Bool
        let video: Bool
        /// When `readPacket` returned it.
        let at: UInt64
    }

    static func options(_ transport: SourceOptions.Transport = .auto, client: SourceOptions.RTSPClient = .liverelay) -> SourceOptions {
        var o = SourceOptions()
        o.transport = transport
        o.rtspClient = client
        o.openTimeout = 20  // gst-rtsp-server prepares the media at the first DESCRIBE: slow on a loaded machine
        o.readTimeout = 5
        return o
    }

    /// Reads for `seconds` of wall time.
    static func read(_ source: any PacketSource, seconds: Double) -> [Read] {
        var out: [Read] = []
        let end = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while MonotonicClock.nanoseconds() < end, let p = try? source.readPacket() {
            out.append(Read(data: p.data, pts: p.pts ?? -1, key: p.isKeyframe, video: p.mediaType == .video, at: MonotonicClock.nanoseconds()))
        }
        return out
    }

    /// Both clients on one URL at once: (LiveRelay's, FFmpeg's) sources and what each read.
    /// LiveRelay's opens first, so that FFmpeg's joins the same shared media (two sessions
    /// opening at once can get one encoder each, whose pictures soon differ).
    static func sideBySide(_ url: String, transport: SourceOptions.Transport, seconds: Double) throws -> (ours: (any PacketSource, [Read]), theirs: (any PacketSource, [Read])) {
        let ours = try RTSPSource.open(url: url, options: options(transport), interruptHandle: InterruptHandle())
        let group = DispatchGroup()
        nonisolated(unsafe) var theirs: Result<(any PacketSource, [Read]), any Error>?
        DispatchQueue.global().async(group: group) {
            theirs = Result {
                let s = try RTSPSource.open(url: url, options: options(transport, client: .ffmpeg), interruptHandle: InterruptHandle())
                return (s, read(s, seconds: seconds))
            }
        }
        let mine = read(ours, seconds: seconds + 0.5)
        group.wait()
        return ((ours, mine), try theirs!.get())
    }

    static let camera30 = "/cam=( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=180,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=500 ! rtph264pay name=pay0 pt=96 )"

    // Exclusive: over UDP on a loaded machine a socket buffer may drop a picture for one client.
    @Test(.tags(.exclusive), arguments: [SourceOptions.Transport.udp, .tcp])
    func picturesAreFFmpegsByteForByteWithTheSameTimestamps(transport: SourceOptions.Transport) throws {
        let server = try Servers.RTSP(mounts: [Self.camera30])
        let (ours, theirs) = try Self.sideBySide(server.url("/cam"), transport: transport, seconds: 3)
        #expect(ours.0 is RTSPSource, "LiveRelay's client took the stream")
        #expect(theirs.0 is IngestSession)
        #expect((ours.0 as? RTSPSource)?.transportUsed == transport)
        let o = ours.0.streams[0], t = theirs.0.streams[0]
        #expect(o.codecName == "h264" && o.width == t.width && o.height == t.height && o.timeBase == t.timeBase)
        #expect(abs((o.frameRate ?? 0) - 30) < 0.5)
        #expect(o.parameters.extradata == t.parameters.extradata, "parameter sets from the SDP")
        // A picture FFmpeg read twice (gst-rtsp-server sends its first keyframe again when a
        // viewer joins shared media; FFmpeg keeps both, LiveRelay drops the repeat) matches
        // neither occurrence: its timestamp is ambiguous.
        // FFmpeg may hand its first picture without a timestamp (seen: -1 here, then 6000,
        // 9000 …, where ours read 0, 3000, 6000 …): nothing to compare it with.
        var byBytes: [[UInt8]: Read] = [:], seen: [[UInt8]: Int] = [:]
        for r in theirs.1 where r.video && r.pts != -1 { byBytes[r.data] = r; seen[r.data, default: 0] += 1 }
        for (data, n) in seen where n > 1 { byBytes[data] = nil }
        let ourVideo = ours.1.filter(\.video)
        #expect(ourVideo.first?.key == true, "starts at a keyframe")
        let matched = ourVideo.compactMap { r in byBytes[r.data].map { (r, $0) } }
        #expect(matched.count >= 50, "\(matched.count) of \(ourVideo.count) pictures equal to FFmpeg's (\(theirs.1.count) read by it)")
        for (a, b) in zip(matched, matched.dropFirst()) {
            // FFmpeg maps RTP time through the sender reports' clock: ±1 tick of rounding.
            #expect(abs((b.0.pts - a.0.pts) - (b.1.pts - a.1.pts)) <= 1, "the same timestamps, up to a constant: ours \(a.0.pts)→\(b.0.pts), FFmpeg's \(a.1.pts)→\(b.1.pts)")
            #expect(b.0.key == b.1.key)
        }
    }

    /// An H.265 camera (RFC 7798), its parameter sets in band with every keyframe: sent as
    /// single NAL units and fragmentation units, or bundled into aggregation packets. LiveRelay's
    /// client takes it and reads FFmpeg's pictures unit for unit (FFmpeg's parser writes some
    /// start codes three bytes long where LiveRelay writes four, and keeps trailing zeros), the parameter sets from
    /// `sprop-vps/sps/pps`, each picture a keyframe where FFmpeg's is.
    @Test(arguments: [("none", SourceOptions.Transport.tcp), ("zero-latency", .tcp)])
    func h265PicturesAreFFmpegsUnitForUnit(aggregate: String, transport: SourceOptions.Transport) throws {
        let server = try Servers.RTSP(mounts: ["/hevc=( videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! x265enc tune=zerolatency speed-preset=ultrafast key-int-max=15 bitrate=500 ! rtph265pay name=pay0 pt=96 config-interval=-1 aggregate-mode=\(aggregate) )"])
        let (ours, theirs) = try Self.sideBySide(server.url("/hevc"), transport: transport, seconds: 3)
        #expect(ours.0 is RTSPSource, "LiveRelay's client took the stream")
        let o = ours.0.streams[0], t = theirs.0.streams[0]
        #expect(o.codecName == "hevc" && t.codecName == "hevc" && o.width == 320 && o.height == 180)
        #expect(abs((o.frameRate ?? 0) - 30) < 0.5)
        #expect(o.parameters.extradata == t.parameters.extradata, "parameter sets from sprop-vps/sps/pps")
        #expect(ParameterSets(extradata: o.parameters.extradata, syntax: .h265).codecString == "hvc1.1.6.L60.90")
        // FFmpeg's parser also keeps the next start code's leading zero (trailing_zero_8bits).
        func units(_ d: [UInt8]) -> [[UInt8]] { H264.annexBRanges(d).map { Array(d[$0].reversed().drop { $0 == 0 }.reversed()) } }
        var byUnits: [[[UInt8]]: Read] = [:], seen: [[[UInt8]]: Int] = [:]
        for r in theirs.1 where r.video && r.pts != -1 { byUnits[units(r.data)] = r; seen[units(r.data), default: 0] += 1 }
        for (data, n) in seen where n > 1 { byUnits[data] = nil }
        let ourVideo = ours.1.filter(\.video)
        #expect(ourVideo.first?.key == true, "starts at a keyframe")
        let matched = ourVideo.compactMap { r in byUnits[units(r.data)].map { (r, $0) } }
        #expect(matched.count >= 50, "\(matched.count) of \(ourVideo.count) pictures equal to FFmpeg's (\(theirs.1.count) read by it)")
        #expect(matched.filter(\.0.key).count >= 3, "a keyframe every 15 pictures")
        for (a, b) in zip(matched, matched.dropFirst()) {
            #expect(abs((b.0.pts - a.0.pts) - (b.1.pts - a.1.pts)) <= 1)
            #expect(b.0.key == b.1.key)
        }
    }

    /// A camera with periodic intra refresh (x264's `intra-refresh`, as low-latency bodycams
    /// use): no IDR after the first picture. Those with a recovery point are keyframes — where
    /// an output can resume after a drop — as FFmpeg's demuxer has them.
    @Test func intraRefreshRecoveryPointsAreKeyframesAsFFmpegHasThem() throws {
        let server = try Servers.RTSP(mounts: ["/ir=( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=180,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 intra-refresh=true bitrate=500 ! rtph264pay name=pay0 pt=96 )"])
        let (ours, theirs) = try Self.sideBySide(server.url("/ir"), transport: .tcp, seconds: 3)
        #expect(ours.0 is RTSPSource, "LiveRelay's client took the stream")
        var byBytes: [[UInt8]: Read] = [:]
        for r in theirs.1 where r.video { byBytes[r.data] = r }
        let matched = ours.1.filter(\.video).compactMap { r in byBytes[r.data].map { (r, $0) } }
        #expect(matched.count >= 50, "\(matched.count) pictures equal to FFmpeg's")
        #expect(matched.allSatisfy { $0.0.key == $0.1.key }, "keyframe flags differ from FFmpeg's")
        // No IDR after the first, yet a keyframe every refresh period (15 pictures).
        let keys = matched.filter(\.0.key)
        #expect(keys.count >= 4, "\(keys.count) keyframes in \(matched.count) pictures")
        #expect(keys.contains { r in !Self.hasIDR(r.0.data) }, "the keyframes were all IDR: no intra refresh")
    }

    /// Whether an Annex B access unit has an IDR slice.
    static func hasIDR(_ au: [UInt8]) -> Bool {
        var i = 0
        while i + 3 < au.count {
            if au[i] == 0, au[i + 1] == 0, au[i + 2] == 1 {
                if au[i + 3] & 0x1F == 5 { return true }
                i += 3
            } else { i += 1 }
        }
        return false
    }

    /// At 2 fps FFmpeg's parser holds each picture ~500 ms, until the next one starts.
    @Test func aPictureIsHandedOnWhenItsLastPacketArrives() throws {
        let server = try Servers.RTSP(mounts: ["/slow=( videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=2/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=4 ! rtph264pay name=pay0 pt=96 )"])
        let (ours, theirs) = try Self.sideBySide(server.url("/slow"), transport: .udp, seconds: 4.5)
        var byBytes: [[UInt8]: Read] = [:]
        for r in theirs.1 where r.video { byBytes[r.data] = r }
        let leads = ours.1.filter(\.video).compactMap { r in byBytes[r.data].map { Double(Int64(bitPattern: $0.at &- r.at)) / 1e6 } }.sorted()
        #expect(leads.count >= 4, "\(leads.count) pictures read by both")
        let median = leads.isEmpty ? 0 : leads[leads.count / 2]
        #expect(median > 250, "LiveRelay's client hands a picture on \(median) ms before FFmpeg's (all: \(leads.map { Int($0) }))")
    }

    @Test(arguments: [("aac", "audiotestsrc is-live=true wave=ticks ! audioconvert ! avenc_aac ! rtpmp4gpay name=pay1 pt=97"),
                      ("pcm_alaw", "audiotestsrc is-live=true wave=ticks ! audioconvert ! audioresample ! audio/x-raw,rate=8000,channels=1 ! alawenc ! rtppcmapay name=pay1")])
    func audioIsFFmpegsByteForByte(codec: String, audio: String) throws {
        let server = try Servers.RTSP(mounts: ["/av=( videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 ! rtph264pay name=pay0 pt=96  \(audio) )"])
        let (ours, theirs) = try Self.sideBySide(server.url("/av"), transport: .tcp, seconds: 3)
        #expect(ours.0 is RTSPSource)
        let o = try #require(ours.0.streams.first { $0.mediaType == .audio }), t = try #require(theirs.0.streams.first { $0.mediaType == .audio })
        #expect(o.codecName == codec && t.codecName == codec)
        #expect(o.parameters.sampleRate == t.parameters.sampleRate && o.parameters.channels == t.parameters.channels)
        #expect(o.parameters.extradata == t.parameters.extradata)
        let theirAudio = Set(theirs.1.filter { !$0.video }.map(\.data))
        let ourAudio = ours.1.filter { !$0.video }
        let matched = ourAudio.filter { theirAudio.contains($0.data) }.count
        #expect(ourAudio.count > 20 && matched >= ourAudio.count / 2, "\(matched) of \(ourAudio.count) audio frames equal to FFmpeg's")
        // Audio and video stay within a frame or two of each other on one timeline.
        let v = try #require(ours.1.first { $0.video }), a = try #require(ours.1.first { !$0.video })
        let vs = Double(v.pts) / 90000, asec = Double(a.pts) / Double(o.parameters.sampleRate)
        let vAt = Double(v.at) / 1e9, aAt = Double(a.at) / 1e9
        #expect(abs((vs - asec) - (vAt - aAt)) < 0.15, "timestamps follow arrival: video \(vs) s, audio \(asec) s")
    }

    @Test(arguments: [("vp8", "videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=15/1 ! vp8enc deadline=1 ! rtpvp8pay name=pay0"),
                      ("h264+opus", "videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast ! rtph264pay name=pay0 pt=96  audiotestsrc is-live=true ! opusenc ! rtpopuspay name=pay1")])
    func whatItDoesNotTakeGoesToFFmpeg(name: String, launch: String) throws {
        let server = try Servers.RTSP(mounts: ["/x=( \(launch) )"])
        let s = try RTSPSource.open(url: server.url("/x"), options: Self.options(.tcp), interruptHandle: InterruptHandle())
        #expect(s is IngestSession, "\(name): FFmpeg's demuxer")
        #expect(Self.read(s, seconds: 1).count >= 10)
        #expect(RTSPSource.FFmpegPreferred.contains(server.url("/x")), "remembered for the next connection")
    }

    @Test(arguments: [false, true])
    func credentialsBasicOrDigest(digest: Bool) throws {
        let server = try Servers.RTSP(mounts: [Self.camera30], arguments: ["--auth", "op:s3cretPW"] + (digest ? ["--digest"] : []))
        let url = server.url("/cam").replacingOccurrences(of: "rtsp://", with: "rtsp://op:s3cretPW@")
        let s = try RTSPSource.open(url: url, options: Self.options(.udp), interruptHandle: InterruptHandle())
        #expect(s is RTSPSource)
        #expect(Self.read(s, seconds: 0.5).count >= 5)
        for bad in [server.url("/cam"), url.replacingOccurrences(of: "s3cretPW", with: "wrongPW")] {
            #expect {
                _ = try RTSPSource.open(url: bad, options: Self.options(.udp), interruptHandle: InterruptHandle())
            } throws: { e in
                guard let e = e as? IngestError else { return false }
                return e.kind == .unauthorized && !e.meansNotServingYet && e.description.contains("401") && !e.description.contains("PW")
            }
        }
    }

    /// A server that answers with garbage, or with a head that never ends: a clear error, in time.
    @Test(.tags(.fast)) func aServerTalkingNonsenseIsAnErrorNotACrash() throws {
        for reply in ["RTSP/1.0 banana\r\n\r\n", "RTSP/1.0 200 OK\r\nCSeq: 1\r\n" + String(repeating: "X-Pad: aaaaaaaa\r\n", count: 5000), "\u{1}\u{2}garbage"] {
            let (fd, port) = FreePort.boundLoopbackSocket(type: Int32(SOCK_STREAM.rawValue))
            listen(fd, 4)
            let served = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let c = accept(fd, nil, nil)
                var buf = [UInt8](repeating: 0, count: 4096)
                _ = recv(c, &buf, buf.count, 0)
                _ = Array(reply.utf8).withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                served.wait()
                close(c)
                close(fd)
            }
            var o = Self.options(.tcp)
            o.openTimeout = 1.5
            let start = MonotonicClock.nanoseconds()
            #expect(throws: IngestError.self) {
                _ = try RTSPSource(url: "rtsp://127.0.0.1:\(port)/x", options: o, interruptHandle: InterruptHandle(), logger: .init(label: "test"))
            }
            #expect(Double(MonotonicClock.nanoseconds() - start) / 1e9 < 2.5)
            served.signal()
        }
    }
}

/// RTP put back together: fabricated packets, for the orders and losses a real camera on a
/// clean link does not produce.
@Suite(.ownThreads, .tags(.fast)) struct RTPTrackTests {
    static func rtp(seq: UInt16, ts: UInt32, marker: Bool = false, _ payload: [UInt8]) -> [UInt8] {
        [0x80, (marker ? 0x80 : 0) | 96, UInt8(seq >> 8), UInt8(seq & 0xFF),
         UInt8(ts >> 24), UInt8(ts >> 16 & 0xFF), UInt8(ts >> 8 & 0xFF), UInt8(ts & 0xFF), 0, 0, 0, 1] + payload
    }

    static func feed(_ t: RTPTrack, _ packets: [[UInt8]], at: UInt64 = 1) {
        for p in packets { p.withUnsafeBytes { t.receive($0, arrival: at) } }
    }

    /// A keyframe as STAP-A (SPS, PPS) and FU-A (the IDR slice in three pieces), then a P slice.
    static let picture: [[UInt8]] = [
        rtp(seq: 10, ts: 3000, [24, 0, 3, 0x67, 1, 2, 0, 2, 0x68, 3]),
        rtp(seq: 11, ts: 3000, [0x7C, 0x85, 0xA0, 0xA1]),
        rtp(seq: 12, ts: 3000, [0x7C, 0x05, 0xA2]),
        rtp(seq: 13, ts: 3000, marker: true, [0x7C, 0x45, 0xA3]),
        rtp(seq: 14, ts: 6000, marker: true, [0x41, 0xB0]),
    ]
    static let keyframeBytes: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 0xA0, 0xA1, 0xA2, 0xA3]

    @Test func aPictureEndsAtItsMarkerBit() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 0, maxDelay: 0.1)
        Self.feed(t, Array(Self.picture[0..<3]))
        #expect(t.frames.isEmpty, "no marker yet")
        Self.feed(t, [Self.picture[3]])
        #expect(t.frames.map(\.data) == [Self.keyframeBytes])
        #expect(t.frames.first?.isKey == true && t.inBand.sps == [[0x67, 1, 2]] && t.inBand.pps == [[0x68, 3]])
        Self.feed(t, [Self.picture[4]])
        #expect(t.frames.count == 2 && t.frames[1].data == [0, 0, 0, 1, 0x41, 0xB0] && !t.frames[1].isKey)
    }

    /// Periodic intra refresh: no IDR after the first, a recovery point SEI where a decoder can
    /// join. That picture is a keyframe (as FFmpeg's parser has it); other SEI are not.
    @Test func aRecoveryPointMakesAKeyframe() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 0, maxDelay: 0.1)
        // User data (type 5, 2 bytes) then a recovery point (type 6), in front of a P slice.
        Self.feed(t, [Self.rtp(seq: 1, ts: 3000, marker: true, [24, 0, 9, 0x06, 5, 2, 0xAA, 0xBB, 6, 1, 0xC4, 0x80, 0, 2, 0x41, 0xB0])])
        // User data only.
        Self.feed(t, [Self.rtp(seq: 2, ts: 6000, marker: true, [24, 0, 6, 0x06, 5, 2, 0xAA, 0xBB, 0x80, 0, 2, 0x41, 0xB1])])
        #expect(t.frames.map(\.isKey) == [true, false], "\(t.frames.map(\.data))")
    }

    /// RFC 7798 with decoding order numbers (`sprop-max-don-diff` > 0): an aggregation packet
    /// (DONL, then DOND before each later unit) with the VPS, SPS and PPS, then an IDR slice in
    /// three fragmentation units (DONL in the first only is read; each FU carries one). Without
    /// DONL the same units come as they are. PACI and a fragment with no start are left out.
    @Test(arguments: [false, true])
    func h265AggregatesAndFragments(donl: Bool) {
        let t = RTPTrack(streamIndex: 0, format: .h265(donl: donl), payloadType: 96, clockRate: 90000, queueSize: 0, maxDelay: 0.1)
        let vps: [UInt8] = [0x40, 0x01, 0x0C], sps: [UInt8] = [0x42, 0x01, 0x01], pps: [UInt8] = [0x44, 0x01, 0xC1]
        var ap: [UInt8] = [48 << 1, 1] + (donl ? [0, 7] : [])
        for (i, u) in [vps, sps, pps].enumerated() { ap += (donl && i > 0 ? [0] : []) + [0, UInt8(u.count)] + u }
        let don: [UInt8] = donl ? [0, 8] : []
        // IDR_W_RADL (19): header 0x26 0x01; FU header S/E bits and type 19.
        Self.feed(t, [Self.rtp(seq: 1, ts: 3000, ap),
                      Self.rtp(seq: 2, ts: 3000, [49 << 1, 1, 0x80 | 19] + don + [0xA0, 0xA1]),
                      Self.rtp(seq: 3, ts: 3000, [49 << 1, 1, 19] + don + [0xA2]),
                      Self.rtp(seq: 4, ts: 3000, marker: true, [49 << 1, 1, 0x40 | 19] + don + [0xA3])])
        #expect(t.frames.map(\.data) == [[0, 0, 0, 1] + vps + [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1, 0x26, 0x01, 0xA0, 0xA1, 0xA2, 0xA3]])
        #expect(t.frames.first?.isKey == true && t.inBand.annexB == [0, 0, 0, 1] + vps + [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps)
        // A trailing picture (TRAIL_R, type 1) as a single unit; a PACI packet; a lone FU end.
        Self.feed(t, [Self.rtp(seq: 5, ts: 6000, [50 << 1, 1, 0, 0]),
                      Self.rtp(seq: 6, ts: 6000, [49 << 1, 1, 0x40 | 1] + don + [0xEE]),
                      Self.rtp(seq: 7, ts: 6000, marker: true, [0x02, 0x01, 0xB0])])
        #expect(t.frames.count == 2 && t.frames[1].data == [0, 0, 0, 1, 0x02, 0x01, 0xB0] && !t.frames[1].isKey)
        // Truncated and lying packets end quietly.
        Self.feed(t, [Self.rtp(seq: 8, ts: 9000, [48 << 1]), Self.rtp(seq: 9, ts: 9000, [48 << 1, 1, 0, 0xFF, 1]),
                      Self.rtp(seq: 10, ts: 9000, [49 << 1, 1]), Self.rtp(seq: 11, ts: 9000, marker: true, [49 << 1, 1, 0x80 | 19])])
        #expect(t.frames.count == 2)
    }

    @Test func reorderedPacketsArePutBackWithinTheQueue() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 100, maxDelay: 0.1)
        Self.feed(t, [Self.picture[0], Self.picture[2], Self.picture[1], Self.picture[4], Self.picture[3]])
        #expect(t.frames.map(\.data) == [Self.keyframeBytes, [0, 0, 0, 1, 0x41, 0xB0]])
        #expect(t.totalLost == 0)
    }

    @Test func aGapIsGivenUpAfterTheWaitAndCountedLost() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 100, maxDelay: 0.05)
        Self.feed(t, [Self.picture[0], Self.picture[1]], at: 1_000_000)
        Self.feed(t, [Self.picture[3], Self.picture[4]], at: 2_000_000) // 12 never comes
        #expect(t.frames.isEmpty && t.nextRelease == 52_000_000)
        t.releaseDue(now: 51_000_000)
        #expect(t.frames.isEmpty)
        t.releaseDue(now: 52_000_000)
        #expect(t.totalLost == 1 && t.frames.count == 2)
        #expect(t.frames[0].lostBefore == 1, "the picture that lost a piece says so")
        Self.feed(t, [Self.picture[2]], at: 60_000_000) // too late now
        #expect(t.totalLost == 2 && t.frames.count == 2)
    }

    @Test func inArrivalOrderNothingWaits() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 0, maxDelay: 0.1)
        Self.feed(t, [Self.picture[0], Self.picture[1], Self.picture[3], Self.picture[4]])
        #expect(t.totalLost == 1 && t.frames.count == 2 && t.frames[0].lostBefore == 1)
    }

    @Test func aacUnitsAndFragments() {
        let t = RTPTrack(streamIndex: 1, format: .aac(sizeLength: 13, indexLength: 3, indexDeltaLength: 3), payloadType: 96, clockRate: 48000, queueSize: 0, maxDelay: 0.1)
        // Two units (3 and 2 bytes) in one packet: headers 0x0018 (3 << 3), 0x0010 (2 << 3).
        Self.feed(t, [Self.rtp(seq: 1, ts: 1000, marker: true, [0, 32, 0, 0x18, 0, 0x10, 1, 2, 3, 4, 5])])
        #expect(t.frames.map(\.data) == [[1, 2, 3], [4, 5]])
        #expect(t.frames.map(\.timestamp) == [1000, 2024])
        // One 4-byte unit over two packets.
        Self.feed(t, [Self.rtp(seq: 2, ts: 3048, [0, 16, 0, 0x20, 9, 8]), Self.rtp(seq: 3, ts: 3048, marker: true, [0, 16, 0, 0x20, 7, 6])])
        #expect(t.frames.last?.data == [9, 8, 7, 6])
    }

    @Test func senderReportsAndBye() {
        let t = RTPTrack(streamIndex: 0, format: .h264, payloadType: 96, clockRate: 90000, queueSize: 0, maxDelay: 0.1)
        // SR: NTP 2208988800 + 100 s, half a second; RTP 90000; then BYE.
        let ntp = UInt32(2_208_988_900)
        var sr: [UInt8] = [0x80, 200, 0, 6, 0, 0, 0, 1]
        sr += [UInt8(ntp >> 24), UInt8(ntp >> 16 & 0xFF), UInt8(ntp >> 8 & 0xFF), UInt8(ntp & 0xFF), 0x80, 0, 0, 0, 0, 1, 0x5F, 0x90]
        sr += [0, 0, 0, 0, 0, 0, 0, 0]
        sr += [0x81, 203, 0, 1, 0, 0, 0, 1]
        sr.withUnsafeBytes { t.receiveControl($0) }
        #expect(t.senderReport?.wallMicros == 100_500_000 && t.senderReport?.timestamp == 90000)
        #expect(t.saidBye)
    }

    @Test func sdpAndControlURLs() {
        let parsed = SessionDescription(parsing: "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=x\r\na=control:*\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LAHtkA,aMuMsg==\r\na=control:stream=0\r\nm=audio 0 RTP/AVP 0\r\na=control:rtsp://h/x/audio\r\nm=application 0 RTP/AVP 107\r\n", limits: .camera) ?? .empty
        let tracks = parsed.media.map(SDPTrack.init)
        #expect(tracks.map(\.kind) == ["video", "audio", "application"])
        #expect(tracks[0].encoding == "H264" && tracks[0].clockRate == 90000 && tracks[0].fmtp["packetization-mode"] == "1")
        #expect(tracks[1].encoding == "PCMU" && tracks[1].clockRate == 8000)
        #expect(SessionDescription.resolve(control: tracks[0].control, base: "rtsp://h/x/") == "rtsp://h/x/stream=0")
        #expect(SessionDescription.resolve(control: tracks[0].control, base: "rtsp://h/x") == "rtsp://h/x/stream=0")
        #expect(SessionDescription.resolve(control: tracks[1].control, base: "rtsp://h/x/") == "rtsp://h/x/audio")
        #expect(SessionDescription.resolve(control: parsed.control, base: "rtsp://h/x/") == "rtsp://h/x/")
        #expect(ParameterSets(sprop: tracks[0].fmtp["sprop-parameter-sets"] ?? "").annexB.prefix(5) == [0, 0, 0, 1, 0x67])
        let a = RTSPURL("rtsp://us%40er:p%3Ass@[::1]:8554/cam?x=1")
        #expect(a?.host == "::1" && a?.port == 8554 && a?.user == "us@er" && a?.password == "p:ss" && a?.withoutCredentials == "rtsp://[::1]:8554/cam?x=1")
    }
}
