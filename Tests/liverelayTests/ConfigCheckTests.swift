import Testing
import Foundation
import TestSupport
import Bench

/// `liverelay config check` makes serve's checks without starting anything; `--version` says
/// what FFmpeg and which hardware this build has.
@Suite(.ownThreads) struct ConfigCheckTests {
    func check(_ file: String) throws -> CommandResult {
        try ChildProcess.run(Paths.liverelay, ["config", "check", file], timeout: 30)
    }

    @Test func everyExampleConfigPasses() throws {
        let dir = Paths.packageRoot.appendingPathComponent("configs")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".yaml") }
        try #require(files.count >= 4)
        for f in files {
            let r = try check(dir.appendingPathComponent(f).path)
            #expect(r.status == 0 && r.stdout.contains(": ok, "), "\(f): \(r.output)")
        }
    }

    @Test func brokenConfigsExitTwoNamingTheKey() throws {
        let dir = Paths.tempDirectory("config-check")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(yaml: String, says: String)] = [
            ("streams:\n  cam: {source: \"testsrc://\", preview: {ordering: sideways}}\n", "streams.cam.preview.ordering"),
            ("streams:\n  cam: {source: \"testsrc://\", recrod: {path: /tmp}}\n", "recrod"),
            ("server:\n  listen: 0.0.0.0:8080\nstreams:\n  cam: {source: \"testsrc://\"}\n", "server.listen"),
            ("server:\n  tls: {cert: \(dir.path)/none.pem, key: \(dir.path)/none.pem}\nstreams:\n  cam: {source: \"testsrc://\"}\n", "server.tls.cert"),
            ("recordings: {min_free: lots}\nstreams:\n  cam: {source: \"testsrc://\"}\n", "recordings.min_free"),
            ("streams: [\n", "not valid YAML"),
        ]
        for (i, c) in cases.enumerated() {
            let file = dir.appendingPathComponent("bad\(i).yaml").path
            try c.yaml.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try check(file)
            #expect(r.status == 2 && r.stderr.contains(c.says) && r.stderr.split(separator: "\n").count == 1, "case \(i): \(r.output)")
            #expect(r.stdout.isEmpty, "case \(i) printed \(r.stdout)")
        }
        // Nothing was started: no port was bound, no state directory made.
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("catalog.sqlite").path))
    }

    @Test func versionSaysFFmpegAndHardware() throws {
        let r = try ChildProcess.run(Paths.liverelay, ["--version"], timeout: 30)
        #expect(r.status == 0, "\(r.output)")
        for line in ["liverelay ", "libavcodec ", "libavformat ", "hardware devices: ", "hardware decoders: ", "hardware encoders: "] {
            #expect(r.stdout.contains(line), "\(line): \(r.stdout)")
        }
        // The commit it was built from: this checkout's HEAD (VersionTests: from a copy elsewhere too).
        let head = try ChildProcess.run("/usr/bin/git", ["-C", Paths.packageRoot.path, "rev-parse", "HEAD"], timeout: 10).stdout.prefix(12)
        #expect(head.count == 12 && r.stdout.contains("(commit \(head))"), "\(head): \(r.stdout)")
    }
}
