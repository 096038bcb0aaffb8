public import MediaCore

/// Where a packet goes on a packet sink's output timeline.
package struct Placement {
    package let packet: Packet
    package let epoch: IngestEpoch
    /// Microseconds on the output timeline, continuous across reconnects and jumps.
    package let pts: Int64
    package let dts: Int64
    package let duration: Int64
    /// The stream that times the output (video, else the first stream).
    package let timing: Bool
    package let keyframe: Bool
    /// Something is missing before this packet (reconnect, timestamp jump, drop): a discontinuity.
    package let gapBefore: Bool
    /// The packet starts a new connection: parameters may have changed.
    package let newEpoch: Bool
}

/// The timeline of a packet sink that muxes without re-encoding (HLS, recording): waits for a
/// keyframe at the start and after every gap, turns timestamps into microseconds on one
/// continuous timeline (a reconnect or a jump continues where the last frame ended), and never
/// lets a stream's timestamps go backwards. Confined to the sink's thread.
package final class PacketTimeline {
    private var generation: Int?
    private var offset: Int64 = 0
    private var rebase = true
    private var waitingForKeyframe = true
    private var gap = false
    private var newEpoch = false
    package private(set) var lastEnd: Int64?
    private var lastDts: [Int: Int64] = [:]
    private var frameDuration: Int64 = 33_333
    /// A forward jump longer than this is a gap, not a pause.
    let maxJump: Int64 = 5_000_000
    /// A forward step this much longer than the time that passed between the two packets'
    /// arrivals is a timestamp jump (RTSP's switch to sender-report time), not a pause: left in,
    /// it would make one segment seconds long and the playlist's target duration grow.
    let maxStepAheadOfArrival: Int64 = 700_000
    private var lastArrival: UInt64?

    /// Where another timeline puts the same source times now (a rendition follows its parent's
    /// HLS): at a start, this timeline takes that offset, so equal source times are equal output
    /// times in both. Nil, or an offset that would go backwards: this timeline's own.
    package var anchor: (@Sendable () -> Int64?)?
    /// Microseconds added to a packet's own time (in microseconds) to place it.
    package var currentOffset: Int64 { offset }
    package init() {}

    /// Microseconds, clamped: any 64-bit timestamp in any time base converts without trapping.
    private func micros(_ t: Int64, _ tb: TimeBase) -> Int64 { Timestamps.int64(Double(t) * tb.seconds(1) * 1e6) }

    private func aheadOfArrival(_ step: Int64, _ arrival: UInt64) -> Bool {
        guard let last = lastArrival, arrival >= last else { return false }
        return Timestamps.subtract(step, Int64((arrival - last) / 1000)) > maxStepAheadOfArrival
    }

    /// Starts again at the next keyframe, after a gap (a muxer failure, a queue drop).
    package func restart() {
        waitingForKeyframe = true
        gap = gap || lastEnd != nil
    }

    /// The packet's place, or nil when it is skipped (no timestamp, waiting for a keyframe,
    /// going backwards).
    package func place(_ item: RelayPacket) -> Placement? {
        let p = item.packet, epoch = item.epoch
        if epoch.generation != generation {
            if generation != nil { gap = true }
            generation = epoch.generation
            newEpoch = true
            rebase = true
            waitingForKeyframe = true
            lastDts = [:]
        }
        let timing = p.streamIndex == (epoch.videoIndex ?? epoch.streams.first?.index)
        // No timestamp (RTSP before its first sender report): nothing to place it by.
        guard let raw = p.dts ?? p.pts else { return nil }
        if waitingForKeyframe {
            guard item.isKeyframe else { return nil }
            waitingForKeyframe = false
        }
        let dtsIn = micros(raw, p.timeBase)
        let ptsIn = p.pts.map { micros($0, p.timeBase) } ?? dtsIn
        if timing {
            let candidate = Timestamps.add(dtsIn, offset)
            if rebase {
                offset = Timestamps.subtract(lastEnd ?? 0, dtsIn)
                if let a = anchor?(), Timestamps.add(dtsIn, a) >= (lastEnd ?? Int64.min) { offset = a }
                rebase = false
            } else if let last = lastDts[p.streamIndex], let end = lastEnd,
                      candidate <= last || candidate > Timestamps.add(end, maxJump) || aheadOfArrival(Timestamps.subtract(candidate, end), item.arrivalNanos) {
                // Timestamps went backwards or jumped: continue the timeline, mark the gap.
                gap = true
                offset = Timestamps.subtract(end, dtsIn)
                lastDts = [:]
                guard item.isKeyframe else { waitingForKeyframe = true; rebase = true; return nil }
            }
        }
        let dts = Timestamps.add(dtsIn, offset), pts = Timestamps.add(ptsIn, offset)
        if let last = lastDts[p.streamIndex], dts <= last { return nil }
        // A packet never lasts longer than the longest jump the timeline accepts as a pause.
        var duration = p.duration > 0 ? min(micros(p.duration, p.timeBase), maxJump) : 0
        if duration <= 0 {
            if timing {
                if let fr = epoch.stream(p.streamIndex)?.frameRate, fr > 0 { duration = Timestamps.int64(1e6 / fr) } else { duration = frameDuration }
            } else {
                duration = 1
            }
        }
        lastDts[p.streamIndex] = dts
        if timing {
            lastEnd = Timestamps.add(dts, duration)
            frameDuration = duration
            lastArrival = item.arrivalNanos
        }
        defer { gap = false; newEpoch = false }
        return Placement(packet: p, epoch: epoch, pts: pts, dts: dts, duration: duration, timing: timing,
                         keyframe: item.isKeyframe, gapBefore: gap, newEpoch: newEpoch)
    }
}
