import Testing
import Foundation
import Logging
import Relay
import Catalog
import Wire
import TestSupport

/// The archive's files read back by their boxes: fragments that begin at keyframes, times that
/// continue from file to file, a selection cut at a keyframe, a playlist of byte ranges, and a
/// clip whose times start at zero and continue over a gap; a file cut short reads up to its
/// last whole fragment.
@Suite(.ownThreads, .serialized) struct RecordingPlaybackUnitTests {
    /// Five seconds of the test source recorded in 1.5 s files into a real catalog: each file's
    /// segment as the catalog keeps it, with the recorder's own index.
    static let recorded: (dir: URL, segments: [RecordedSegment]) = {
        let dir = Paths.tempDirectory("playback-unit")
        let done = DispatchSemaphore(value: 0)
        let box = SegmentsBox()
        Task {
            guard let catalog = try? await SQLiteCatalog.open(path: dir.appendingPathComponent("catalog.sqlite").path) else { done.signal(); return }
            let writer = SegmentWriter(catalog: catalog) { _, _ in }
            let hub = StreamHub(name: "cam", source: "testsrc://?size=160x96&fps=30&gop=15", opener: TestSources.opener, logger: Logger(label: "test"))
            var settings = RecordSettings(path: dir.appendingPathComponent("rec").path)
            settings.segmentDuration = 1.5
            let recorder = Recorder(hub: hub, settings: settings, segments: writer, logger: Logger(label: "test"))
            recorder.start()
            hub.start()
            try? await Task.sleep(for: .milliseconds(5000))
            await hub.stop()
            await recorder.stop()
            await writer.drain()
            box.segments = (try? await catalog.indexedSegments(stream: "cam", from: .distantPast, to: .distantFuture)) ?? []
            await catalog.close()
            done.signal()
        }
        done.wait()
        // On a clock of its own, each file after the one before.
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        var at = base
        let segments = box.segments.map { s -> RecordedSegment in
            var s = s
            s.start = at
            at = at.addingTimeInterval(s.duration)
            return s
        }
        return (dir, segments)
    }()

    final class SegmentsBox: @unchecked Sendable { var segments: [RecordedSegment] = [] }

    /// The index the recorder kept is the one the file's boxes give.
    @Test(.tags(.fast)) func theRecordersIndexIsTheFilesOwn() throws {
        let segments = Self.recorded.segments
        try #require(segments.count >= 3)
        for s in segments {
            let kept = try #require(s.index, "\(s.path) has no index in the catalog")
            let read = try RecordedFileIndex.read(path: s.path)
            #expect(kept.initLength == read.initSection.count && kept.initHash == SHA256Stream.hex(read.initSection))
            #expect(kept.fragments.count == read.fragments.count, "\(kept.fragments.count) kept, \(read.fragments.count) in the file")
            for (k, r) in zip(kept.fragments, read.fragments) {
                #expect(k.offset == r.offset && k.length == r.length && k.moofLength == r.moofLength && k.keyframe == r.keyframe)
                #expect(abs(k.start - r.start) < 0.001 && abs(k.duration - r.duration) < 0.04, "\(k) against \(r)")
            }
            // Round trip through the catalog's bytes.
            #expect(SegmentIndex(encoded: kept.encoded()) == kept)
        }
        // Damaged bytes give no index (the file is read instead), never a trap.
        let bytes = try #require(segments.first?.index).encoded()
        for n in 0..<bytes.count { _ = SegmentIndex(encoded: Array(bytes.prefix(n))) }
        for i in 0..<bytes.count { var b = bytes; b[i] ^= 0xFF; _ = SegmentIndex(encoded: b) }
    }

    @Test(.tags(.fast)) func filesAreIndexedByFragmentAndContinueOneAnother() throws {
        let segments = Self.recorded.segments
        try #require(segments.count >= 3, "\(segments.map(\.path))")
        var previousEnd: Double?
        for s in segments {
            let index = try RecordedFileIndex.read(path: s.path)
            #expect(index.tracks.first?.codecName == "h264" && s.codecs == "h264")
            #expect(index.fragments.first?.keyframe == true)
            #expect(index.fragments.first?.offset == index.initSection.count)
            for (a, b) in zip(index.fragments, index.fragments.dropFirst()) { #expect(a.offset + a.length == b.offset) }
            #expect(index.fragments.last.map { $0.offset + $0.length } == index.size)
            // Decode times run on from the file before (one session).
            if let p = previousEnd, let start = index.mediaStart { #expect(abs(p - start) < 0.001, "\(p) then \(start)") }
            previousEnd = index.mediaEnd
        }
    }

    @Test(.tags(.fast)) func aSelectionStartsAtAKeyframeAndAPlaylistMapsEachFile() throws {
        let segments = Self.recorded.segments
        let start = segments[0].start
        let selection = RecordingSelection.select(segments, from: start.addingTimeInterval(0.7), to: start.addingTimeInterval(3.2),
                                                  cache: RecordedFileIndexCache())
        let first = try #require(selection.fragments.first)
        #expect(first.fragment.keyframe && first.wall <= start.addingTimeInterval(0.7) && first.wall > start.addingTimeInterval(0.7 - 0.6))
        #expect(Set(selection.fragments.map(\.session)) == [0])
        let text = RecordingPlaylist.make(selection) { "recording/\($0)" }
        let files = Set(selection.fragments.map(\.file.path)).count
        #expect(text.components(separatedBy: "#EXT-X-MAP:").count - 1 == files && !text.contains("DISCONTINUITY"), "\(text)")
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
    }

    @Test func aClipStartsAtZeroAndContinuesOverAGap() throws {
        // The later files moved 30 s on: a restart between (a new session).
        var segments = Self.recorded.segments
        for i in 2..<segments.count { segments[i].start = segments[i].start.addingTimeInterval(30) }
        let selection = RecordingSelection.select(segments, from: segments[0].start, to: segments.last!.end.addingTimeInterval(1),
                                                  cache: RecordedFileIndexCache())
        #expect(Set(selection.fragments.map(\.session)) == [0, 1])
        #expect(RecordingPlaylist.make(selection) { $0 }.components(separatedBy: "#EXT-X-DISCONTINUITY").count == 2)
        let export = try #require(RecordingExport(selection))
        #expect(export.offsets.last == export.pieces.reduce(0) { $0 + $1.length })
        // The clip written out, then read by FFmpeg: it starts at zero and lasts the media, not the gap.
        var bytes: [UInt8] = []
        for i in export.pieces.indices { bytes += try #require(export.bytes(ofPiece: i, read: { RecordingExport.read(path: $0, offset: $1, count: $2) })) }
        #expect(bytes.count == export.length)
        let clip = Self.recorded.dir.appendingPathComponent("clip.mp4").path
        try Data(bytes).write(to: URL(fileURLWithPath: clip))
        let media = segments.reduce(0) { $0 + $1.duration }
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=start_time,duration", "-of", "csv=p=0", clip], timeout: 30)
        let f = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Double($0) }
        #expect(f.count == 2 && abs(f[0]) < 0.001 && abs(f[1] - media) < 0.2, "\(probe.stdout) for \(media) s of media")
        let decode = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", clip, "-f", "null", "-"], timeout: 30)
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
        // Any range of the clip is the same bytes, piece by piece.
        for range in [0..<10, 5..<export.length, (export.length / 3)..<(export.length / 2), (export.length - 1)..<export.length] {
            var part: [UInt8] = []
            for (i, from, count) in export.pieces(in: range) {
                part += try #require(export.bytes(ofPiece: i, from: from, count: count, read: { RecordingExport.read(path: $0, offset: $1, count: $2) }))
            }
            #expect(part == Array(bytes[range]), "\(range)")
        }
    }

    @Test(.tags(.fast)) func aFileCutShortReadsUpToItsLastWholeFragment() throws {
        let s = Self.recorded.segments[0]
        let whole = try RecordedFileIndex.read(path: s.path)
        let data = try Data(contentsOf: URL(fileURLWithPath: s.path))
        let cut = Self.recorded.dir.appendingPathComponent("cut.mp4").path
        try data.prefix(data.count - 100).write(to: URL(fileURLWithPath: cut))
        let index = try RecordedFileIndex.read(path: cut)
        #expect(index.fragments.count == whole.fragments.count - 1)
        // Nothing but a head: not a recording, said.
        try data.prefix(20).write(to: URL(fileURLWithPath: cut))
        #expect(throws: RecordedFileIndex.Problem.self) { try RecordedFileIndex.read(path: cut) }
    }

    @Test(.tags(.fast)) func recordingFileNamesAreReadFromTheEnd() {
        #expect(RecordingFileName("cam-20261125-152532.mp4")?.stream == "cam")
        #expect(RecordingFileName("my-cam-20261125-152532.mp4")?.stream == "my-cam")
        #expect(RecordingFileName("cam-2-20261125-152532-3.mp4")?.stream == "cam-2")
        #expect(RecordingFileName("cam-20261125-152532.mp4")?.began == Date(timeIntervalSince1970: 1_795_620_332))
        #expect(RecordingFileName("cam-2026112-152532.mp4") == nil)
        #expect(RecordingFileName("20261125-152532.mp4") == nil)
        #expect(RecordingFileName("cam-20261125-152532.mkv") == nil)
    }
}
