import Testing
import Foundation
import Logging
import MediaCore
import Demux
@testable import Relay
import TestSupport
import StampedSource

/// The segmenter on files whose keyframes come late or never: the playlist keeps its target
/// duration (RFC 8216 forbids changing it), no segment outgrows it, and the segments decode.
@Suite(.ownThreads, .serialized) struct HLSSegmenterTests {
    /// A 12 s 30 fps H.264 file with the keyframes given (seconds), made by ffmpeg's libx264.
    static func file(_ dir: URL, keyframes: String) throws -> URL {
        let url = dir.appendingPathComponent("gop.ts")
        let x264 = keyframes.isEmpty ? "keyint=infinite:scenecut=0" : "keyint=600:min-keyint=600:scenecut=0"
        var args = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "12", "-c:v", "libx264", "-preset", "ultrafast",
                    "-x264-params", x264, "-pix_fmt", "yuv420p"]
        if !keyframes.isEmpty { args += ["-force_key_frames", keyframes] }
        let r = try ChildProcess.run("/usr/bin/ffmpeg", args + ["-f", "mpegts", url.path], timeout: 60)
        guard r.status == 0 else { throw Servers.ServerError("ffmpeg: \(r.stderr)") }
        return url
    }

    /// Runs the file through a hub into classic HLS with 1 s segments; returns the segments
    /// and the largest target duration any playlist showed along the way.
    static func segment(_ file: URL, variant: HLSSettings.Variant = .mpegts) async throws -> (HLSSegmenter, [HLSSegment], Int, [String]) {
        let hub = StreamHub(name: "gop", source: file.path, logger: Logger(label: "test"))
        var h = HLSSettings(variant: variant)
        h.segmentDuration = 1
        h.segmentCount = 100
        let hls = HLSSegmenter(hub: hub, settings: h, logger: Logger(label: "test"))
        hls.start()
        hub.start()
        var largest = 0
        var playlists: [String] = []
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let p = hls.store.snapshot
            largest = max(largest, p.targetDuration)
            if case .playlist(let text) = await hls.store.playlist(msn: nil, part: nil) { playlists.append(text) }
            if hls.status.counters.received >= 360 && hls.handle.queue.depth == 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        await hub.stop()
        await hls.stop()
        let final = hls.store.snapshot
        largest = max(largest, final.targetDuration)
        return (hls, final.complete, largest, playlists)
    }

    /// Every segment, in order, written to one file and counted by ffprobe.
    static func decodedFrames(_ segments: [HLSSegment], _ hls: HLSSegmenter, dir: URL) async throws -> (Int, String) {
        var all = Data()
        for s in segments { all.append(contentsOf: await hls.store.resource(s.uri)?.data ?? []) }
        let out = dir.appendingPathComponent("all.ts")
        try all.write(to: out)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                         "-of", "default=nw=1:nk=1", out.path], timeout: 30)
        return (Int(r.stdout.split(separator: "\n").first ?? "") ?? 0, r.stderr)
    }

    @Test func aLateKeyframeKeepsTheTargetDurationAndTheSegmentsDecode() async throws {
        let dir = Paths.tempDirectory("lategop")
        defer { try? FileManager.default.removeItem(at: dir) }
        // 1 s GOPs, but the keyframe at 5 s is missing: one GOP of 2 s.
        let file = try Self.file(dir, keyframes: "0,1,2,3,4,6,7,8,9,10,11")
        let (hls, segments, largest, playlists) = try await Self.segment(file)
        #expect(largest == 1, "EXT-X-TARGETDURATION went up to \(largest)")
        #expect(segments.allSatisfy { $0.duration <= 1.45 }, "\(segments.map(\.duration))")
        #expect(segments.count >= 11)
        // The segment cut without a keyframe says so, and the playlist stops promising
        // independent segments while it is listed.
        let dependent = segments.filter { !$0.independent }
        #expect(dependent.count == 1, "\(segments.map { ($0.sequence, $0.independent, $0.duration) })")
        #expect(playlists.contains { !$0.contains("#EXT-X-INDEPENDENT-SEGMENTS") })
        let (frames, errors) = try await Self.decodedFrames(segments, hls, dir: dir)
        #expect(frames == 360 && errors.isEmpty, "\(frames) frames: \(errors)")
    }

    @Test func aSourceWithoutKeyframesStillGetsSegmentsOnTime() async throws {
        let dir = Paths.tempDirectory("nogop")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.file(dir, keyframes: "")
        let (hls, segments, largest, _) = try await Self.segment(file)
        #expect(largest == 1)
        // Twelve seconds in segments of at most 1.45 s, all but the first cut without a keyframe.
        #expect(segments.count >= 9 && segments.allSatisfy { $0.duration <= 1.45 }, "\(segments.map(\.duration))")
        #expect(segments.dropFirst().allSatisfy { !$0.independent })
        let (frames, errors) = try await Self.decodedFrames(segments, hls, dir: dir)
        #expect(frames == 360 && errors.isEmpty, "\(frames) frames: \(errors)")
    }

    /// LL-HLS from the same late-keyframe file: target duration and PART-TARGET never move, and
    /// only parts that start with a keyframe say INDEPENDENT=YES.
    @Test func lowLatencyKeepsItsTargetsWithALateKeyframe() async throws {
        let dir = Paths.tempDirectory("lategopll")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.file(dir, keyframes: "0,1,2,3,4,6,7,8,9,10,11")
        let (_, segments, largest, playlists) = try await Self.segment(file, variant: .lowLatency)
        #expect(largest == 1)
        #expect(segments.allSatisfy { $0.duration <= 1.45 }, "\(segments.map(\.duration))")
        let partTargets = Set(playlists.compactMap { p in p.split(separator: "\n").first { $0.hasPrefix("#EXT-X-PART-INF:") } })
        #expect(partTargets.count == 1, "\(partTargets)")
        #expect(segments.filter { !$0.independent }.count == 1)
        #expect(segments.allSatisfy { $0.parts.first?.independent == $0.independent })
    }

    /// Live, with a keyframe a GOP late every other interval: classic HLS is woken only at
    /// keyframes, yet a segment cut for lack of one is listed as soon as the media reaches the
    /// longest a segment may be, not at the next wake-up (players wait for it).
    @Test(.tags(.fast, .exclusive)) func aSegmentCutForALateKeyframeIsListedOnTime() async throws {
        let hub = StreamHub(name: "late", source: "testsrc://?size=160x96&fps=30&gop=30&late_keyframe=2", opener: TestSources.opener, logger: Logger(label: "test"))
        var h = HLSSettings(variant: .mpegts)
        h.segmentDuration = 1
        h.segmentCount = 20
        let hls = HLSSegmenter(hub: hub, settings: h, logger: Logger(label: "test"))
        try await hub.run(with: hls, for: 7.5)
        let segments = hls.store.snapshot.complete
        #expect(segments.filter { !$0.independent }.count >= 2, "\(segments.map(\.duration))")
        let a = hls.store.availability.summary
        // Without the wake-up on time these were listed up to a second late (p90 601 ms in the bench).
        #expect((a.maxMs ?? 1e9) < 250, "last frame → listed: \(a)")
    }

    /// Live, and then the source falls silent while still connected (a publisher gone quiet, a
    /// camera whose link stalls): the segment it was in is completed and listed once it is due,
    /// with the media it has, instead of waiting for media that does not come.
    @Test(.tags(.fast)) func theLastSegmentOfASourceThatFallsSilentIsListed() async throws {
        var opener = TestSources.opener
        opener.register(scheme: "silent", open: { _, interrupt throws(IngestError) in
            SilentAfter(try StampedSource.open(url: "testsrc://?size=160x96&fps=30&gop=30", interrupt: interrupt), frames: 75)
        }, validate: { _ in nil })
        let hub = StreamHub(name: "silent", source: "silent://", opener: opener, logger: Logger(label: "test"))
        var h = HLSSettings(variant: .mpegts)
        h.segmentDuration = 2
        let hls = HLSSegmenter(hub: hub, settings: h, logger: Logger(label: "test"))
        hls.start()
        hub.start()
        // 75 frames: a 2 s segment, then 0.5 s of the next; it is due 2.5 s after it began.
        try await Task.sleep(for: .seconds(5.5))
        let segments = hls.store.snapshot.complete
        await hub.stop()
        await hls.stop()
        #expect(segments.count == 2, "\(segments.map(\.duration))")
        #expect(abs((segments.last?.duration ?? 0) - 0.5) < 0.05, "\(segments.map(\.duration))")
    }
}

/// A source that sends `frames` packets and then nothing, connected, until it is stopped.
final class SilentAfter: PacketSource {
    let inner: any PacketSource
    var left: Int
    init(_ inner: any PacketSource, frames: Int) { self.inner = inner; left = frames }
    var streams: [StreamInfo] { inner.streams }
    var formatName: String { inner.formatName }
    var interruptHandle: InterruptHandle { inner.interruptHandle }
    func readPacket() throws -> Packet? {
        guard left > 0 else {
            while !interruptHandle.isInterrupted { usleep(20_000) }
            throw IngestError(.stopped, source: "silent://", stage: "reading", detail: "stopped")
        }
        left -= 1
        return try inner.readPacket()
    }
}
