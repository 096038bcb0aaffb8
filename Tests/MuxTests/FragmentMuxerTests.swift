import Testing
import StampedSource
import Foundation
import MediaCore
import Wire
@testable import Mux
import TestSupport

/// The segment writer on its own: packets of the stamped source cut into segments in memory,
/// each written to a file and read back by ffprobe.
@Suite(.ownThreads) struct FragmentMuxerTests {
    static func packets(_ frames: Int) throws -> (packets: [Packet], streams: [StreamInfo]) {
        try TestMedia.packets(frames)
    }

    /// Frames ffprobe counts in a file, and what it said on stderr.
    static func probeFrames(_ file: URL) throws -> (frames: Int, errors: String) {
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                         "-of", "default=nw=1:nk=1", file.path], timeout: 20)
        // MPEG-TS lists the stream twice (in its program and on its own): the first line counts.
        return (Int(r.stdout.split(separator: "\n").first ?? "") ?? 0, r.stderr)
    }

    @Test(arguments: [FragmentFormat.mpegts, .fmp4])
    func everySegmentCutAtAKeyframePlaysOnItsOwn(format: FragmentFormat) throws {
        let (packets, streams) = try Self.packets(90)
        let muxer = try FragmentMuxer(format: format, streams: streams)
        #expect(muxer.carries(streamIndex: streams[0].index) && !muxer.carries(streamIndex: 99))
        #expect(format == .fmp4 ? !muxer.initSegment.isEmpty : muxer.initSegment.isEmpty)
        var segments: [[UInt8]] = []
        for (i, p) in packets.enumerated() {
            if i > 0 && p.isKeyframe { segments.append(try muxer.cut()) }
            let us = Int64(i) * 33_333
            try muxer.write(p, pts: us, dts: us, duration: 33_333)
        }
        segments.append(try muxer.cut())
        #expect(segments.count == 3)
        let dir = Paths.tempDirectory("frag")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (i, bytes) in segments.enumerated() {
            let file = dir.appendingPathComponent("seg\(i).\(format == .mpegts ? "ts" : "mp4")")
            try Data(muxer.initSegment + bytes).write(to: file)
            let (frames, errors) = try Self.probeFrames(file)
            #expect(frames == 30 && errors.isEmpty, "segment \(i): \(frames) frames \(errors) \(bytes.count) bytes")
        }
    }

    /// A segment cut without a keyframe (a late one) starts with the parameter sets, so a player
    /// that reads the codec from its first bytes finds them; an avcC's are length-prefixed.
    @Test(.tags(.fast)) func aSegmentStartingWithoutAKeyframeCarriesTheParameterSets() throws {
        let (packets, streams) = try Self.packets(30)
        let muxer = try FragmentMuxer(format: .mpegts, streams: streams)
        var second: [UInt8] = []
        for (i, p) in packets.enumerated() {
            if i == 15 { _ = try muxer.cut() }
            try muxer.write(p, pts: Int64(i) * 33_333, dts: Int64(i) * 33_333, duration: 33_333)
        }
        second = try muxer.cut()
        #expect(!packets[15].isKeyframe)
        func firstNAL(_ type: UInt8) -> Int? {
            guard second.count > 4 else { return nil }
            return (0..<(second.count - 4)).first { second[$0] == 0 && second[$0 + 1] == 0 && second[$0 + 2] == 1 && second[$0 + 3] & 0x1F == type }
        }
        let sps = try #require(firstNAL(7), "no SPS in the segment"), slice = try #require(firstNAL(1), "no slice")
        #expect(sps < slice)
        // avcC: version 1, profile, compat, level, 4-byte lengths, one SPS, one PPS.
        let avcC: [UInt8] = [1, 0x42, 0, 0x1E, 0xFF, 0xE1, 0, 3, 0x67, 0x42, 0x00, 1, 0, 2, 0x68, 0xCE]
        #expect(AVCDecoderConfiguration(parsing: avcC)?.lengthPrefixedParameterSets == [0, 0, 0, 3, 0x67, 0x42, 0x00, 0, 0, 0, 2, 0x68, 0xCE])
        #expect(AVCDecoderConfiguration(parsing: [1, 0x42, 0, 0x1E, 0xFF, 0xE1, 0, 30, 0x67]) == nil)
    }

    @Test func partsJoinIntoTheirSegment() throws {
        let (packets, streams) = try Self.packets(30)
        let muxer = try FragmentMuxer(format: .fmp4, streams: streams)
        var parts: [[UInt8]] = []
        for (i, p) in packets.enumerated() {
            if i > 0 && i % 6 == 0 { parts.append(try muxer.cut()) }
            let us = Int64(i) * 33_333
            try muxer.write(p, pts: us, dts: us, duration: 33_333)
        }
        parts.append(try muxer.cut())
        #expect(parts.count == 5 && parts.allSatisfy { !$0.isEmpty })
        let dir = Paths.tempDirectory("parts")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("seg.mp4")
        try Data(muxer.initSegment + parts.flatMap { $0 }).write(to: file)
        let (frames, errors) = try Self.probeFrames(file)
        #expect(frames == 30 && errors.isEmpty, "\(frames) frames \(errors)")
    }
}
