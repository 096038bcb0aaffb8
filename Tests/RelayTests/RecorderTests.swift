import Testing
import Foundation
import Logging
import MediaCore
import Relay
import TestSupport
import Glibc

/// The recorder in process, with the real test source: files rotate by duration, each one
/// plays on its own, and together they hold every frame in order.
@Suite(.ownThreads, .serialized) struct RecorderTests {
    @Test func rotatesByDurationAndEveryFilePlays() async throws {
        let dir = Paths.tempDirectory("rec")
        defer { try? FileManager.default.removeItem(at: dir) }
        let hub = StreamHub(name: "cam", source: "testsrc://?size=320x180&fps=30&gop=30", opener: TestSources.opener, logger: Logger(label: "test"))
        var settings = RecordSettings(path: dir.path)
        settings.segmentDuration = 1
        let recorder = Recorder(hub: hub, settings: settings, logger: Logger(label: "test"))
        try await hub.run(with: recorder, for: 4.2)
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

    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// A disk that fills up: the error is reported (API state, last error, error count) and the
    /// recording resumes on its own once there is room again.
    @Test func aFullDiskIsReportedAndRecordingResumesWhenThereIsRoom() async throws {
        guard getuid() == 0 else { Issue.record("needs root to mount a small tmpfs (CI runs as root)"); return }
        let dir = Paths.tempDirectory("recfull")
        defer { _ = try? ChildProcess.run("/bin/umount", [dir.path], timeout: 10); try? FileManager.default.removeItem(at: dir) }
        let mount = try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", dir.path], timeout: 10)
        try #require(mount.status == 0, "\(mount.stderr)")
        let hub = StreamHub(name: "full", source: "testsrc://?size=640x360&fps=30&gop=15&bitrate=4000", opener: TestSources.opener, logger: Logger(label: "test"))
        let recorder = Recorder(hub: hub, settings: RecordSettings(path: dir.path), logger: Logger(label: "test"))
        recorder.start()
        hub.start()
        let full = try await Self.waitUntil(10) { recorder.status.state == .faulted }
        #expect(full, "never reported the full disk: \(recorder.status.state)")
        #expect(recorder.status.lastError?.lowercased().contains("space") == true, "\(recorder.status.lastError ?? "-")")
        #expect(recorder.status.errors >= 1)
        // Room again: the recorder opens a new file by itself and writes into it.
        let before = recorder.recordedFiles.count
        for f in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] { try? FileManager.default.removeItem(atPath: dir.path + "/" + f) }
        let resumed = try await Self.waitUntil(5) {
            recorder.recordedFiles.count > before && ((try? FileManager.default.attributesOfItem(atPath: recorder.recordedFiles.last!)[.size] as? Int) ?? 0) > 1000
        }
        #expect(resumed, "no new file after room was made: \(recorder.recordedFiles)")
        await hub.stop()
        await recorder.stop()
    }

    /// The recording directory removed mid-run: noticed at the next fragment, reported, and a
    /// new file starts in the directory made again; every file left plays.
    @Test func aRemovedDirectoryIsMadeAgainAndTheRecordingGoesOn() async throws {
        let dir = Paths.tempDirectory("recgone")
        defer { try? FileManager.default.removeItem(at: dir) }
        let hub = StreamHub(name: "gone", source: "testsrc://?size=320x180&fps=30&gop=15", opener: TestSources.opener, logger: Logger(label: "test"))
        let recorder = Recorder(hub: hub, settings: RecordSettings(path: dir.appendingPathComponent("rec").path), logger: Logger(label: "test"))
        recorder.start()
        hub.start()
        try await Task.sleep(for: .milliseconds(1500))
        try FileManager.default.removeItem(at: dir.appendingPathComponent("rec"))
        let again = try await Self.waitUntil(5) { recorder.recordedFiles.count >= 2 && FileManager.default.fileExists(atPath: recorder.recordedFiles.last!) }
        #expect(again, "\(recorder.recordedFiles)")
        #expect(recorder.status.lastError?.contains("removed") == true)
        try await Task.sleep(for: .milliseconds(1500))
        await hub.stop()
        await recorder.stop()
        let last = try #require(recorder.recordedFiles.last)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                         "-of", "default=nw=1:nk=1", last], timeout: 20)
        #expect((Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 30 && r.stderr.isEmpty, "\(r.output)")
    }
}
