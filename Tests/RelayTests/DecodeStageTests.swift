import Testing
import Foundation
import Logging
import MediaCore
import Demux
import Decode
import Relay
import TestSupport

/// The decode stage on its own thread: a decoder that cannot keep up costs the packet outputs
/// nothing. A real RTSP/UDP camera (gst-rtsp-server, 30 fps) into a hub whose decoder (the real
/// libavcodec one) is held to 10 packets a second by `SlowDecoder`.
@Suite(.ownThreads, .serialized) struct DecodeStageTests {
    @Test func aSlowDecoderSkipsToKeyframesWhileEveryPacketReachesHLS() async throws {
        let camera = try Servers.RTSP()
        var o = SourceOptions()
        o.transport = .udp
        let logger = Logger(label: "test")
        let slow = DecoderFactory { stream, options, logger in SlowDecoder(try VideoDecoder(stream: stream, options: options, logger: logger), perPacket: 0.1) }
        let hub = StreamHub(name: "slowdecode", source: camera.url(), sourceOptions: o, decoders: slow, logger: logger)
        var h = HLSSettings(variant: .mpegts)
        h.segmentDuration = 1
        h.segmentCount = 20
        let hls = HLSSegmenter(hub: hub, settings: h, logger: logger)
        // What the ingest handed out, untouched: to check no packet went missing before the hub.
        let all = hub.attachOutput("all", kind: .viewer, policy: SinkPolicy(ordering: .arrival, freshness: .lossless(capacity: 100_000)), taking: .blocking(batching: false)).queue
        let frames = hub.addFrameQueue("viewer", policy: SinkPolicy(ordering: .arrival, freshness: .latest(count: 1)))
        let taken = Thread { while frames.pop(timeout: 10) != nil {} }
        taken.start()
        try await hub.run(with: hls, for: 6)

        let decode = hub.decode.status
        let hlsStatus = hls.status
        // The ingest kept reading at the camera's pace: ~30 video packets a second reached HLS.
        var video: [Int64] = []
        while let p = all.pop(timeout: 0) { if p.packet.streamIndex == p.epoch.videoIndex, let d = p.packet.dts { video.append(d) } }
        #expect(video.count >= 30 * 4, "only \(video.count) video packets in 6 s")
        // None of them lost: RTP timestamps step by one frame (3000 at 90 kHz) throughout.
        let steps = zip(video, video.dropFirst()).map { $1 - $0 }
        #expect(steps.filter { $0 != 3000 }.count <= 1, "steps other than one frame: \(steps.filter { $0 != 3000 })")
        // HLS took every packet the hub gave it, dropped none, and its segments hold them all.
        #expect(hlsStatus.counters.droppedTotal == 0, "\(hlsStatus.counters)")
        #expect(hlsStatus.counters.received == all.counters.received)
        let segments = hls.store.snapshot.complete
        let listed = segments.reduce(0) { $0 + $1.duration }
        #expect(listed >= Double(video.count) / 30 - 1.5, "segments cover \(listed) s of \(video.count) frames")
        // The decoder fell behind and said so: skips counted on the decode output, by reason.
        let skipped = decode.counters.dropped[.tooOld] + decode.counters.dropped[.resync]
        #expect(skipped > 30, "decode output: \(decode.counters)")
        #expect(decode.counters.delivered < video.count / 2)
        #expect(decode.counters.received == decode.counters.delivered + decode.counters.droppedTotal + decode.queueDepth)
    }
}

/// libavcodec's decoder, made to take `perPacket` seconds a packet: a decoder that cannot keep
/// up with its camera, as a 4K camera's on a small machine, at a rate the test chooses.
final class SlowDecoder: PictureDecoder {
    let inner: VideoDecoder
    let perPacket: Double
    init(_ inner: VideoDecoder, perPacket: Double) { self.inner = inner; self.perPacket = perPacket }
    var path: DecoderPath { inner.path }
    var fallbackReason: String? { inner.fallbackReason }
    var counters: DecodeCounters { inner.counters }
    func decode(_ packet: Packet) -> [Frame] {
        Thread.sleep(forTimeInterval: perPacket)
        return inner.decode(packet)
    }
}
