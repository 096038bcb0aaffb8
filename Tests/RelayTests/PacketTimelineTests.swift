import Testing
import TestSupport
import MediaCore
import StampedSource
@testable import Relay

/// The packet timeline on real H.264 packets from the stamped source (1 s GOPs at 30 fps).
@Suite(.ownThreads, .tags(.fast)) struct PacketTimelineTests {
    static func packets(_ frames: Int) throws -> (packets: [Packet], streams: [StreamInfo]) {
        try TestMedia.packets(frames)
    }

    @Test func startsAtAKeyframeAndRunsContinuously() throws {
        let (packets, streams) = try Self.packets(60)
        let epoch = IngestEpoch(generation: 1, streams: streams)
        let timeline = PacketTimeline()
        let placed = packets.compactMap { timeline.place(RelayPacket(packet: $0, epoch: epoch)) }
        #expect(placed.count == 60)
        #expect(placed.first?.keyframe == true && placed.first?.dts == 0)
        #expect(placed.first?.newEpoch == true && placed.allSatisfy { !$0.gapBefore })
        // 30 fps: every step is one frame (33 333 µs), never backwards.
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $1.dts - $0.dts == 33_333 || $1.dts - $0.dts == 33_334 })
    }

    @Test func aReconnectContinuesWhereTheLastFrameEndedAndIsMarked() throws {
        let (packets, streams) = try Self.packets(45)
        let first = IngestEpoch(generation: 1, streams: streams), second = IngestEpoch(generation: 2, streams: streams)
        let timeline = PacketTimeline()
        let a = packets.compactMap { timeline.place(RelayPacket(packet: $0, epoch: first)) }
        let end = try #require(timeline.lastEnd)
        // The source comes back with its timestamps from 0 again: placed right after, a gap.
        let b = packets.compactMap { timeline.place(RelayPacket(packet: $0, epoch: second)) }
        #expect(a.count == 45 && b.count == 45)
        #expect(b[0].dts == end)
        #expect(b[0].gapBefore && b[0].newEpoch && b[0].keyframe)
        #expect(b.dropFirst().allSatisfy { !$0.gapBefore && !$0.newEpoch })
    }

    @Test func aTimestampJumpBecomesAGapAtTheNextKeyframe() throws {
        let (packets, streams) = try Self.packets(120)
        let epoch = IngestEpoch(generation: 1, streams: streams)
        let timeline = PacketTimeline()
        // Frames 40…69 never arrive (the camera stalled and skipped a second): frame 70 comes
        // right after 39 in arrival time but a second later in timestamps.
        let kept = packets.enumerated().filter { !(40..<70).contains($0.offset) }.map(\.element)
        let placed = kept.compactMap { timeline.place(RelayPacket(packet: $0, epoch: epoch)) }
        // Frames after the jump up to the next keyframe (frame 90) cannot be decoded: skipped.
        #expect(placed.count == 40 + 30)
        let resumed = placed[40]
        #expect(resumed.gapBefore && resumed.keyframe)
        #expect(resumed.dts == placed[39].dts + placed[39].duration, "the timeline continues without the hole")
    }

    @Test func restartWaitsForTheNextKeyframe() throws {
        let (packets, streams) = try Self.packets(70)
        let epoch = IngestEpoch(generation: 1, streams: streams)
        let timeline = PacketTimeline()
        var placed: [Placement] = []
        for (i, p) in packets.enumerated() {
            if i == 10 { timeline.restart() }
            if let at = timeline.place(RelayPacket(packet: p, epoch: epoch)) { placed.append(at) }
        }
        #expect(placed.count == 10 + 40) // frames 10…29 wait for the keyframe at 30
        #expect(placed[10].gapBefore && placed[10].keyframe)
    }

    /// Timestamps from the wild (random, near the Int64 limits, missing, backwards, the 33-bit
    /// MPEG-TS wrap): the timeline never traps, and what it places never goes backwards.
    @Test func arbitraryTimestampsNeverTrapAndNeverGoBackwards() throws {
        let (packets, streams) = try Self.packets(30)
        let epoch = IngestEpoch(generation: 1, streams: streams)
        var rng = SystemRandomNumberGenerator()
        let specials: [Int64?] = [nil, .min, .max, .min + 1, .max - 1, 0, -1, 1 << 33, (1 << 33) - 3000, 1 << 62, -(1 << 62)]
        for round in 0..<200 {
            let timeline = PacketTimeline()
            var lastDts: Int64?
            var arrival: UInt64 = 1_000_000_000
            for i in 0..<60 {
                let base = packets[i % packets.count]
                let pick = Int.random(in: 0..<4, using: &rng)
                let t: Int64? = pick == 0 ? specials.randomElement(using: &rng)! : (pick == 1 ? Int64.random(in: .min ... .max, using: &rng) : Int64(i) * 3000 + Int64(round))
                let d: Int64? = Bool.random(using: &rng) ? t : specials.randomElement(using: &rng)!
                let duration = [Int64(0), 3000, .max, .min, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng)!
                arrival &+= UInt64.random(in: 0...200_000_000, using: &rng)
                let p = try base.retimed(pts: t, dts: d, duration: duration, arrivalNanos: arrival)
                if let at = timeline.place(RelayPacket(packet: p, epoch: epoch)), at.timing {
                    if let last = lastDts { #expect(at.dts > last, "round \(round), packet \(i): \(at.dts) after \(last)") }
                    lastDts = at.dts
                }
            }
        }
    }

    /// The 33-bit MPEG-TS wrap (26.5 h): the timeline continues across it without a hole.
    @Test func theMPEGTSWrapContinues() throws {
        let (packets, streams) = try Self.packets(60)
        let epoch = IngestEpoch(generation: 1, streams: streams)
        let timeline = PacketTimeline()
        // Timestamps running up to the wrap (2^33 at 90 kHz, 95 443.7 s) and starting again near
        // 0 at frame 30 (a keyframe), in the stream's own time base.
        let tb = packets[0].timeBase
        let wrapSeconds = Double(1 << 33) / 90_000
        var placed: [Placement] = []
        for (i, p) in packets.enumerated() {
            let seconds = (wrapSeconds - 1 + Double(i) / 30).truncatingRemainder(dividingBy: wrapSeconds)
            let t = Int64((seconds / tb.seconds).rounded())
            let retimed = try p.retimed(pts: t, dts: t, duration: 0, arrivalNanos: UInt64(i) * 33_333_333 + 1)
            if let at = timeline.place(RelayPacket(packet: retimed, epoch: epoch)) { placed.append(at) }
        }
        #expect(placed.count == 60)
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $1.dts > $0.dts })
        #expect(placed[30].gapBefore, "a wrap is a discontinuity to the muxers")
        #expect(abs(placed[30].dts - (placed[29].dts + placed[29].duration)) <= 1)
    }
}
