import Testing
import TestSupport
import Foundation
import Bench

/// The harness's process wrapper: every byte a child prints is collected, and the threads that
/// collect it end with the child (a soak starts a hundred children in one test process).
@Suite(.ownThreads) struct ChildProcessTests {
    static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    @Test func outputIsCollectedWholeAndTheReadingThreadsEnd() throws {
        let before = Self.threads()
        for i in 0..<40 {
            // 100,000 bytes on stdout (more than a pipe holds) and a line on stderr.
            let p = try ChildProcess("/bin/sh", ["-c", "head -c 100000 /dev/zero | tr '\\0' x; echo done \(i) >&2"])
            #expect(p.wait(timeout: 10))
            let deadline = Date().addingTimeInterval(5)
            while (p.stdout.utf8.count < 100_000 || !p.stderr.contains("done \(i)")) && Date() < deadline { usleep(5_000) }
            #expect(p.stdout.utf8.count == 100_000)
            #expect(p.stderr == "done \(i)\n")
        }
        let deadline = Date().addingTimeInterval(5)
        while Self.threads() > before + 4 && Date() < deadline { usleep(20_000) }
        #expect(Self.threads() <= before + 4, "reading threads left behind: \(Self.threads()) against \(before)")
    }
}
