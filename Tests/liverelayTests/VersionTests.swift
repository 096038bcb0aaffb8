import Testing
import Foundation
import Glibc
import TestSupport
import Bench

/// `--version` names the commit the binary was built from wherever it runs, not only under
/// the checkout's `.build`: the commit is stamped in at build time (the CommitStamp plugin).
@Suite(.ownThreads) struct VersionTests {
    @Test func aBinaryOutsideTheCheckoutNamesItsCommit() throws {
        let dir = Paths.tempDirectory("version")
        defer { try? FileManager.default.removeItem(at: dir) }
        let built = URL(fileURLWithPath: Paths.liverelay).resolvingSymlinksInPath().path
        let installed = dir.appendingPathComponent("liverelay").path
        // A hard link where the disk allows (a debug binary is large), else a copy: either way
        // no checkout above the path it runs from.
        if link(built, installed) != 0 { try FileManager.default.copyItem(atPath: built, toPath: installed) }
        let r = try ChildProcess.run("/bin/sh", ["-c", "cd /tmp && exec \"$0\" --version", installed], timeout: 30)
        #expect(r.status == 0, "\(r.output)")
        let first = r.stdout.split(separator: "\n").first.map(String.init) ?? ""
        let commit = first.firstRange(of: "(commit ").map { String(first[$0.upperBound...].prefix { $0 != ")" }) } ?? ""
        #expect(commit.count >= 7 && commit.allSatisfy { "0123456789abcdef".contains($0) }, "\(first)")
        #expect(!first.contains("unknown"), "\(first)")
        // The one this checkout was at when the binary was built.
        let head = try ChildProcess.run("/usr/bin/git", ["-C", Paths.packageRoot.path, "rev-parse", "HEAD"], timeout: 10).stdout
        #expect(!commit.isEmpty && head.hasPrefix(commit), "\(commit) is not HEAD \(head)")
    }
}
