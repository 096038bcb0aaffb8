import Testing
import Wire
import Foundation
import MediaCore
import Demux
import Relay
import TestSupport

/// What the ops wall sends a browser's WebCodecs decoder must decode on its own: Annex B with
/// the parameter sets on every keyframe, whatever form the source delivered.
@Suite(.ownThreads) struct H264AnnexBTests {
    /// Converts every video packet of `file`, starting at its `skip`-th keyframe (as a viewer
    /// joining late does), and has FFmpeg decode the result with no extradata.
    func decodedFrames(of file: URL, skipKeyframes skip: Int) throws -> (frames: Int, codec: String?, fed: Int) {
        let session = try IngestSession(url: file.path)
        let video = try #require(session.streams.first { $0.mediaType == .video })
        var annexB = H264AnnexB(extradata: video.parameters.extradata)
        var out: [UInt8] = []
        var keyframes = 0, fed = 0
        while let p = try session.readPacket() {
            guard p.streamIndex == video.index else { continue }
            if p.isKeyframe { keyframes += 1 }
            guard keyframes > skip else { continue }
            out += annexB.accessUnit(p.data, keyframe: p.isKeyframe)
            fed += 1
        }
        let raw = file.deletingPathExtension().appendingPathExtension("h264")
        try Data(out).write(to: raw)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-f", "h264", "-count_frames", "-select_streams", "v:0",
                                                          "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", raw.path], timeout: 60)
        #expect(r.stderr.isEmpty, "the decoder complained: \(r.stderr.prefix(300))")
        return (Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, annexB.codec, fed)
    }

    @Test(arguments: ["flv", "mp4", "ts"])
    func everyContainerBecomesSelfContainedAnnexB(_ ext: String) throws {
        let dir = Paths.tempDirectory("annexb")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("in.\(ext)")
        try TestMedia.writeFile(file, frames: 90, size: "320x240", gop: 30)
        // From the second keyframe on: the stream's first keyframe (which may carry the
        // parameter sets in band) is not there to help.
        let r = try decodedFrames(of: file, skipKeyframes: 1)
        #expect(r.fed == 60)
        #expect(r.frames == 60, "\(r.frames) of 60 decoded from \(ext)")
        let codec = try #require(r.codec)
        #expect(codec.hasPrefix("avc1.") && codec.count == 11, "\(codec)")
    }

    @Test(.tags(.fast)) func lengthPrefixedUnitsAreSplitAndAnOverrunEndsThePacket() {
        // avcC with 4-byte lengths: SPS (profile 0x64, level 0x28) and one PPS.
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x28, 0xAC]
        let pps: [UInt8] = [0x68, 0xEE, 0x3C]
        let avcC: [UInt8] = [1, 0x64, 0x00, 0x28, 0xFF, 0xE1, 0, UInt8(sps.count)] + sps + [1, 0, UInt8(pps.count)] + pps
        var c = H264AnnexB(extradata: avcC)
        #expect(c.codec == "avc1.640028")
        let idr: [UInt8] = [0x65, 1, 2, 3]
        let out = c.accessUnit([0, 0, 0, 4] + idr + [0, 0, 0, 99, 1], keyframe: true)
        #expect(out == [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1] + idr)
        // A delta frame gets no parameter sets; garbage gives an empty unit, not a crash.
        #expect(c.accessUnit([0, 0, 0, 2, 0x41, 9], keyframe: false) == [0, 0, 0, 1, 0x41, 9])
        #expect(c.accessUnit([0xFF, 0xFF], keyframe: true).count == 4 + sps.count + 4 + pps.count)
        #expect(H264AnnexB(extradata: [1, 2, 3]).codec == nil)
    }
}

@Suite(.ownThreads, .tags(.fast)) struct HLSUploadOrderTests {
    @Test func segmentNumbersComeFromTheName() {
        #expect(HLSUploads.sequence(of: "index12.ts") == 12)
        #expect(HLSUploads.sequence(of: "cam-2_000345.m4s") == 345)
        #expect(HLSUploads.sequence(of: "init.mp4") == nil)
        #expect(HLSUploads.sequence(of: "segment.ts") == nil)
        #expect(HLSUploads.sequence(of: "99999999999999999999999.ts") != nil)
    }
}

@Suite(.ownThreads, .tags(.fast)) struct H264PictureTests {
    @Test func onlySlicesArePictures() {
        #expect(H264.hasSlice([0, 0, 0, 1, 0x65, 1, 2], extradata: []))          // IDR slice
        #expect(H264.hasSlice([0, 0, 1, 0x09, 0x10, 0, 0, 1, 0x41, 7], extradata: []))  // AUD + slice
        #expect(!H264.hasSlice([0, 0, 0, 1, 0x06, 5, 1], extradata: []))         // SEI only: 'missing picture in access unit'
        #expect(!H264.hasSlice([], extradata: []))
        let avcC: [UInt8] = [1, 0x64, 0, 0x28, 0xFF, 0xE0, 0]
        #expect(H264.hasSlice([0, 0, 0, 2, 0x41, 9], extradata: avcC))
        #expect(!H264.hasSlice([0, 0, 0, 2, 0x09, 0x10], extradata: avcC))
    }
}
