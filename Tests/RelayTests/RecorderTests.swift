import Testing
import Foundation
import Logging
import MediaCore
import Relay
import TestSupport

/// The recorder in process, with the real test source: files rotate by duration, each one
/// plays on its own, and together they hold every frame in order.
@Suite(.serialized) struct RecorderTests {
    @Test func rotatesByDurationAndEveryFilePlays() async throws {
        let dir = Paths.tempDirectory("rec")
        defer { try? FileManager.default.removeItem(at: dir) }
        let hub = StreamHub(name: "cam", source: "testsrc://?size=320x180&fps=30&gop=30", opener: TestSources.opener, logger: Logger(label: "test"))
        var settings = RecordSettings(path: dir.path)
        settings.segmentDuration = 1
        let recorder = Recorder(hub: hub, settings: settings, logger: Logger(label: "test"))
        recorder.start()
        hub.start()
        try await Task.sleep(for: .milliseconds(4200))
        await hub.stop()
        await recorder.stop()
        let files = recorder.recordedFiles
        #expect(files.count >= 3, "\(files)")
        var total = 0
        for (i, f) in files.enumerated() {
            let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                             "-of", "default=nw=1:nk=1", f], timeout: 20)
            let n = Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            // Every file but the last (cut short by the stop) holds about a second.
            #expect(r.stderr.isEmpty && n >= (i == files.count - 1 ? 1 : 25), "\(f): \(n) frames \(r.stderr)")
            total += n
        }
        // Nothing lost between files: the frames add up to what the source sent (the last
        // partial second included).
        #expect(total >= 115, "\(total) frames in \(files.count) files")
    }
}
