import Foundation

/// The commit of the checkout this binary runs from (a binary under `.build/` of a git checkout:
/// `.git/HEAD` and its ref, read without a git process; SwiftPM has no way to stamp it in at
/// build time without a plugin); nil for a copy installed elsewhere.
enum BuildCommit {
    static var current: String? {
        var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<8 {
            let git = dir.appendingPathComponent(".git")
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path),
               let head = try? String(contentsOf: git.appendingPathComponent("HEAD"), encoding: .utf8) {
                return resolve(head.trimmingCharacters(in: .whitespacesAndNewlines), git: git).map { String($0.prefix(12)) }
            }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// `ref: refs/heads/main` through its loose file or packed-refs; a detached HEAD as it is.
    private static func resolve(_ head: String, git: URL) -> String? {
        guard head.hasPrefix("ref: ") else { return head.count >= 12 ? head : nil }
        let ref = String(head.dropFirst(5))
        if let loose = try? String(contentsOf: git.appendingPathComponent(ref), encoding: .utf8) {
            return loose.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let packed = (try? String(contentsOf: git.appendingPathComponent("packed-refs"), encoding: .utf8)) ?? ""
        for line in packed.split(separator: "\n") where line.hasSuffix(" " + ref) {
            return String(line.prefix { $0 != " " })
        }
        return nil
    }
}
