import Testing
import StampedSource
import Foundation
import MediaCore
import Demux
import Decode
import Mux
import TestSupport

@Suite(.ownThreads, .tags(.fast)) struct DecoderTests {
    init() { FFmpegLog.silence() }

    @Test func everyStampOfThousandsOfFramesReadsBackExactly() throws {
        let source = try TestSource(url: "testsrc://?size=320x240&fps=30&gop=30&frames=2000&realtime=false&bitrate=400")
        let decoder = try VideoDecoder(stream: try #require(source.videoStream), options: { var o = DecoderOptions(); o.hardware = .none; return o }())
        var expected: UInt32 = 0
        var misreads = 0
        while let p = try source.readPacket() {
            for f in decoder.decode(p) {
                if let s = f.readStamp(), s.frameNumber == expected { expected += 1 } else { misreads += 1; expected += 1 }
            }
        }
        decoder.sendEndOfStream()
        for f in decoder.drain() {
            if let s = f.readStamp(), s.frameNumber == expected { expected += 1 } else { misreads += 1; expected += 1 }
        }
        #expect(expected == 2000)
        #expect(misreads == 0)
    }

    @Test func autoFallsBackToSoftwareAndSaysWhy() throws {
        let source = try TestSource(url: "testsrc://?size=320x240&frames=10&realtime=false")
        let decoder = try VideoDecoder(stream: try #require(source.videoStream))
        if FileManager.default.fileExists(atPath: "/dev/dri") {
            // A machine with a render node may take VAAPI; then there is no fallback to explain.
            #expect(decoder.path == .vaapi || decoder.fallbackReason != nil)
        } else {
            #expect(decoder.path == .software)
            #expect(decoder.fallbackReason == "vaapi: no /dev/dri render node")
        }
        var frames = 0
        while let p = try source.readPacket() { frames += decoder.decode(p).count }
        decoder.sendEndOfStream()
        frames += decoder.drain().count
        #expect(frames == 10)
    }

    @Test func explicitDeviceThatDoesNotExistIsNamed() throws {
        let source = try TestSource(url: "testsrc://?size=320x240&frames=1&realtime=false")
        var o = DecoderOptions()
        o.hardware = .vaapi
        o.devicePath = "/dev/dri/renderD999"
        let decoder = try VideoDecoder(stream: try #require(source.videoStream), options: o)
        #expect(decoder.path == .software)
        #expect(decoder.fallbackReason == "vaapi: /dev/dri/renderD999 does not exist")
    }

    @Test func softwareOnlyHasNoFallbackReason() throws {
        let source = try TestSource(url: "testsrc://?size=320x240&frames=1&realtime=false")
        var o = DecoderOptions()
        o.hardware = .none
        let decoder = try VideoDecoder(stream: try #require(source.videoStream), options: o)
        #expect(decoder.path == .software)
        #expect(decoder.fallbackReason == nil)
    }

    @Test func corruptPacketsAreCountedAndDecodingResumesAtTheNextKeyframe() throws {
        let dir = Paths.tempDirectory("corrupt")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Damage bytes in the middle of an MPEG-TS file, then decode all of it.
        let file = dir.appendingPathComponent("clip.ts")
        try TestMedia.writeFile(file, frames: 90, size: "320x240", gop: 30)
        var data = try Data(contentsOf: file)
        var rng = SystemRandomNumberGenerator()
        for i in stride(from: data.count / 3, to: data.count / 3 + 20_000, by: 7) where i % 188 > 4 {
            data[i] = UInt8.random(in: 0...255, using: &rng)
        }
        try data.write(to: file)
        let session = try IngestSession(url: file.path)
        let decoder = try VideoDecoder(stream: try #require(session.videoStream))
        var stamps: [UInt32] = []
        while let p = try session.readPacket() {
            for f in decoder.decode(p) { if let s = f.readStamp() { stamps.append(s.frameNumber) } }
        }
        decoder.sendEndOfStream()
        for f in decoder.drain() { if let s = f.readStamp() { stamps.append(s.frameNumber) } }
        let c = decoder.counters
        #expect(c.corruptPackets + c.corruptFrames + c.skippedUntilKeyframe > 0, "\(c)")
        // The last GOP is intact: its frames all decode with their stamps.
        #expect(Set(60..<90).isSubset(of: Set(stamps.map(Int.init))), "\(stamps)")
    }

    @Test func scalerConvertsFormatAndSizeAndKeepsTheStampReadable() throws {
        let source = try TestSource(url: "testsrc://?size=640x360&frames=3&realtime=false")
        let decoder = try VideoDecoder(stream: try #require(source.videoStream))
        var frames: [Frame] = []
        while let p = try source.readPacket() { frames += decoder.decode(p) }
        decoder.sendEndOfStream()
        frames += decoder.drain()
        let frame = try #require(frames.first)
        let scaler = Scaler()
        let rgb = try scaler.convert(frame, to: .rgb24)
        #expect(rgb.pixelFormat == .rgb24 && rgb.width == 640 && rgb.height == 360)
        // Top-left cell of the sync row is white: R, G and B all high.
        let px = rgb.planeBytes(0, rowBytes: 3 * 640, rows: 2)
        #expect(px[0] > 200 && px[1] > 200 && px[2] > 200)
        let gray = try scaler.convert(frame, to: .gray8, width: 320, height: 180)
        #expect(gray.width == 320 && gray.height == 180 && gray.pixelFormat == .gray8)
        #expect(gray.readStamp() == frame.readStamp())
        #expect(gray.arrivalNanos == frame.arrivalNanos)
        let same = try scaler.convert(frame, to: frame.pixelFormat)
        #expect(same === frame)
    }

    @Test(.tags(.exclusive)) func openingAndClosingAThousandDecodersDoesNotLeak() throws {
        let source = try TestSource(url: "testsrc://?size=320x240&frames=2&realtime=false")
        let stream = try #require(source.videoStream)
        let packet = try #require(try source.readPacket())
        func cycle() throws {
            let d = try VideoDecoder(stream: stream)
            _ = d.decode(packet)
        }
        for _ in 0..<100 { try cycle() }
        let before = TestMedia.residentKiB()
        for _ in 0..<1000 { try cycle() }
        let after = TestMedia.residentKiB()
        #expect(after - before < 8 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
    }
}
