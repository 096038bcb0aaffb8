import Testing
import Foundation
import TestSupport
import Bench
import Glibc
import Relay
import RelayAPI

/// Recordings found by time: the recorder's files go into the catalog with their SHA-256
/// chained, and the API gives the recorded spans with the restart between them as a gap.
@Suite(.ownThreads, .serialized) struct RecordingsTests {
    /// Holds the last five seconds and the next one of `stream` (POST …/holds): 201; returns
    /// the hold's end.
    @discardableResult
    func hold(port: Int, stream: String, reason: String) throws -> Date {
        let f = ISO8601DateFormatter()
        let now = Date()
        let end = now.addingTimeInterval(1)
        let body = #"{"start": "\#(f.string(from: now.addingTimeInterval(-5)))", "end": "\#(f.string(from: end))", "reason": "\#(reason)"}"#
        let held = try ChildProcess.run("/usr/bin/curl", ["-s", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "--data", body,
                                                          "http://127.0.0.1:\(port)/api/recordings/\(stream)/holds"], timeout: 15)
        #expect(held.stdout.hasSuffix("201"), "\(held.stdout)")
        return end
    }

    @Test func recordedSpansShowARestartAsAGapAndEachFileIsHashed() throws {
        let dir = Paths.tempDirectory("recordings")
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        let yaml = "streams:\n  cam: {source: \"testsrc://?size=160x96&fps=15&gop=15\", preview: false, record: {path: \(rec), segment_duration: 3s}}\n"
        let began = Date()
        do {
            let (serve, _, _) = try Servers.serve(yaml, dir: dir)
            Thread.sleep(forTimeInterval: 8)
            serve.stop()
        }
        Thread.sleep(forTimeInterval: 3)
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        Thread.sleep(forTimeInterval: 8)
        let f = ISO8601DateFormatter()
        let url = "http://127.0.0.1:\(port)/api/recordings/cam?start=\(f.string(from: began.addingTimeInterval(-5)))&end=\(f.string(from: Date().addingTimeInterval(5)))"
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-g", url], timeout: 15)
        let listing = try #require(try? Servers.decode(RecordingListing.self, r.stdout), "\(r.stdout)")
        let spans = listing.spans
        let gaps = listing.gaps
        // The first run's files (its last written at shutdown) and the second's finished ones.
        #expect(spans.count == 2, "\(listing)")
        #expect((gaps.first?.duration ?? 0) >= 2, "\(gaps)")
        #expect(listing.segments >= 3, "\(listing)")
        let recorded = spans.reduce(0.0) { $0 + $1.duration }
        #expect(recorded >= 9 && recorded <= 17, "recorded \(recorded) s: \(listing)")
        // A bad range is refused with a reason.
        let bad = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/api/recordings/cam?start=yesterday"], timeout: 15)
        #expect(bad.stdout == "400")
        serve.stop()

        // Proved untouched: the chain verifies; a flipped byte, a deleted file and an extra file
        // are each named.
        func verify() throws -> (Int32, String) {
            let r = try ChildProcess.run(Paths.liverelay, ["recordings", "verify", "--state-dir", dir.path], timeout: 60)
            return (r.status, r.stdout + r.stderr)
        }
        let (ok, okText) = try verify()
        #expect(ok == 0 && okText.contains("chain intact"), "\(okText)")
        let files = try FileManager.default.contentsOfDirectory(atPath: rec).filter { $0.hasSuffix(".mp4") }.sorted()
        try #require(files.count >= 3, "\(files)")
        let second = (rec as NSString).appendingPathComponent(files[1])
        let handle = try #require(FileHandle(forUpdatingAtPath: second))
        try handle.seek(toOffset: 2000)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: 2000)
        try handle.write(contentsOf: [byte ^ 0x01])
        try handle.close()
        let (altered, alteredText) = try verify()
        #expect(altered == 1 && alteredText.contains("segment 2 was altered") && alteredText.contains(files[1]), "\(alteredText)")
        // A range after the altered file: only its files are re-hashed, and they are whole.
        let later = try ChildProcess.run(Paths.liverelay, ["recordings", "verify", "--state-dir", dir.path, "--start", f.string(from: Date().addingTimeInterval(-4))], timeout: 60)
        #expect(later.status == 0 && later.stdout.contains("re-hashed"), "\(later.output)")
        try FileManager.default.removeItem(atPath: second)
        let (missing, missingText) = try verify()
        #expect(missing == 1 && missingText.contains("segment 2 is missing"), "\(missingText)")
        // The catalog lost: reindex rebuilds it from the files that are there (a new chain).
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dir.appendingPathComponent("catalog.sqlite" + suffix).path) }
        let re = try ChildProcess.run(Paths.liverelay, ["recordings", "reindex", "--config", dir.appendingPathComponent("config.yaml").path,
                                                        "--state-dir", dir.path], timeout: 60)
        #expect(re.status == 0 && re.stdout.contains("\(files.count - 1) files catalogued anew"), "\(re.output)")
        let (again, againText) = try verify()
        #expect(again == 0 && againText.contains("\(files.count - 1) segments verified"), "\(againText)")
    }

    /// Retention by age deletes the oldest files, not a held range, and the chain still verifies.
    @Test func retentionDeletesOldestFirstButNotAHeldRange() throws {
        let dir = Paths.tempDirectory("retention")
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        let yaml = "streams:\n  cam: {source: \"testsrc://?size=160x96&fps=15&gop=15\", preview: false, record: {path: \(rec), segment_duration: 2s, keep: 4s}}\n"
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        // Hold the first two seconds (the first file) at once.
        try hold(port: port, stream: "cam", reason: "case 7")
        Thread.sleep(forTimeInterval: 3)
        let firstMade = try #require(try FileManager.default.contentsOfDirectory(atPath: rec).filter { $0.hasSuffix(".mp4") }.sorted().first)
        Thread.sleep(forTimeInterval: 13)
        let files = try FileManager.default.contentsOfDirectory(atPath: rec).filter { $0.hasSuffix(".mp4") }.sorted()
        serve.stop()
        let log = serve.stdout + serve.stderr
        // About eight files were made: the held first one stays, expired ones went, recent ones stay.
        let verify = try ChildProcess.run(Paths.liverelay, ["recordings", "verify", "--state-dir", dir.path], timeout: 60)
        #expect(verify.status == 0 && verify.stdout.contains("chain intact"), "\(verify.stdout)\(verify.stderr)")
        let count = verify.stdout.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        #expect(count >= 6, "\(verify.stdout)")
        #expect(files.count >= 2 && files.count <= count - 2, "\(files.count) of \(count) files left: \(files)\n\(log.suffix(1500))")
        #expect(files.first == firstMade, "the held first file went: \(files)")
    }

    /// Retention by size (`record.max_bytes`) and by the free-space floor (`recordings.min_free`,
    /// on a small tmpfs): the oldest files go first, a held range stays, the chains verify.
    @Test func retentionBySizeAndByTheFreeSpaceFloorDeletesOldestFirstButNotAHeldRange() throws {
        guard getuid() == 0 else { Issue.record("needs root to mount a small tmpfs (CI runs as root)"); return }
        let dir = Paths.tempDirectory("floor")
        let disk = dir.appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mount = try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", disk], timeout: 10)
        try #require(mount.status == 0, "\(mount.stderr)")
        defer { _ = try? ChildProcess.run("/bin/umount", [disk], timeout: 10); try? FileManager.default.removeItem(at: dir) }
        let sized = dir.appendingPathComponent("sized").path
        let floor = 2_000_000
        // The disk starts nearly at the floor (a filler file): some 300 KB of recording reaches
        // it, whatever the encoder makes of the test pattern.
        var st = statvfs()
        try #require(statvfs(disk, &st) == 0)
        let filler = Int(st.f_bavail) * Int(st.f_frsize) - floor - 300_000
        try Data(count: filler).write(to: URL(fileURLWithPath: (disk as NSString).appendingPathComponent("filler.bin")))
        let yaml = """
            recordings: {min_free: \(floor)B}
            streams:
              sized: {source: "testsrc://?size=320x180&fps=30&gop=30&bitrate=400", preview: false, record: {path: \(sized), segment_duration: 1s, max_bytes: 200KB}}
              floored: {source: "testsrc://?size=320x180&fps=30&gop=30&bitrate=1000", preview: false, record: {path: \(disk), segment_duration: 1s}}

            """
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        let heldUntil = try hold(port: port, stream: "floored", reason: "case 9")
        func files(_ path: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".mp4") }.sorted() }
        var seen: [String: Set<String>] = ["sized": [], "floored": []]
        let end = Date().addingTimeInterval(22)
        var lowest = Int.max
        while Date() < end {
            seen["sized"]!.formUnion(files(sized))
            seen["floored"]!.formUnion(files(disk))
            if statvfs(disk, &st) == 0 { lowest = min(lowest, Int(st.f_bavail) * Int(st.f_frsize)) }
            Thread.sleep(forTimeInterval: 0.3)
        }
        let left = (sized: files(sized), floored: files(disk))
        let audit = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/audit?stream=floored"], timeout: 15)
        seen["sized"]!.formUnion(left.sized)
        seen["floored"]!.formUnion(left.floored)
        let heldFile = try #require(seen["floored"]!.sorted().first)
        serve.stop()
        let log = serve.stdout + serve.stderr
        // Oldest first: what is left of each stream is the newest of what was made (the held
        // first file aside), and some were deleted.
        let sizedAll = seen["sized"]!.sorted(), flooredAll = seen["floored"]!.sorted()
        #expect(left.sized.count < sizedAll.count && left.sized == Array(sizedAll.suffix(left.sized.count)), "\(left.sized) of \(sizedAll)")
        let bytes = left.sized.reduce(0) { $0 + (((try? FileManager.default.attributesOfItem(atPath: (sized as NSString).appendingPathComponent($1)))?[.size] as? Int) ?? 0) }
        // Retention looks every 5 s: up to that much more, and the file being written.
        let perFile = bytes / max(1, left.sized.count)
        #expect(bytes <= 200_000 + 6 * perFile, "\(bytes) bytes kept under max_bytes 200KB (\(perFile) bytes a file)")
        // Held: every file that began before the hold's end (one, or two when the stream started
        // within its last second: a loaded machine).
        func isHeld(_ file: String) -> Bool { file == heldFile || (RecordingFileName(file).map { $0.began < heldUntil } ?? false) }
        let rest = left.floored.filter { !isHeld($0) }, unheld = flooredAll.filter { !isHeld($0) }
        #expect(left.floored.contains(heldFile), "the held file went: \(left.floored)")
        #expect(rest.count < unheld.count && rest == Array(unheld.suffix(rest.count)), "\(left.floored) of \(flooredAll)")
        // The disk never filled: the floor was kept within what five seconds of recording add.
        #expect(lowest > 500_000, "free space fell to \(lowest) bytes\n\(log.suffix(1500))")
        #expect(!log.contains("No space left"), "\(log.suffix(1500))")
        let verify = try ChildProcess.run(Paths.liverelay, ["recordings", "verify", "--state-dir", dir.path], timeout: 60)
        #expect(verify.status == 0, "\(verify.output)")
        // The audit log has the hold and each deletion, by retention.
        let lines = (try? Servers.decode([AuditEntry].self, audit.stdout)) ?? []
        #expect(lines.contains { $0.action == .hold && $0.detail.hasSuffix("case 9") }, "\(audit.stdout.prefix(800))")
        let deletions = lines.filter { $0.action == .delete && $0.who == "retention" }
        // (Give or take one deleted while the two were read.)
        #expect(deletions.count > 0 && abs(deletions.count - (flooredAll.count - left.floored.count)) <= 1, "\(deletions.count) deletions logged for \(flooredAll.count - left.floored.count) files gone")
    }
}
