import Foundation
import PackagePlugin

/// Stamps the commit a build is made from into the target it is applied to, as
/// `BuildStamp.commit` (nil without git), so that `liverelay --version` names it wherever the
/// binary is copied.
///
/// One build command, run again when HEAD moves: its inputs are `HEAD` (a checkout of another
/// branch or commit) and HEAD's reflog (`logs/HEAD`, appended by every commit, checkout, reset,
/// merge and pull), both files git keeps for the life of the repository (a loose ref file is
/// not: `git pack-refs` removes it, and a missing input fails the build). Not a prebuild
/// command: SwiftPM runs those only when it plans again, which an incremental build after a
/// commit does not do. The file is rewritten only when the commit changed, so nothing
/// recompiles otherwise.
@main
struct CommitStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let root = context.package.directoryURL
        let out = context.pluginWorkDirectoryURL.appendingPathComponent("BuildStamp.swift")
        let inputs = Self.gitDirectory(of: root).map { git in
            ["HEAD", "logs/HEAD"].map { git.appendingPathComponent($0) }.filter { FileManager.default.fileExists(atPath: $0.path) }
        } ?? []
        return [.buildCommand(displayName: "Stamping the commit into \(target.name)",
                              executable: URL(fileURLWithPath: "/bin/sh"),
                              arguments: ["-c", Self.script, "commit-stamp", root.path, out.path],
                              inputFiles: inputs, outputFiles: [out])]
    }

    /// The repository's directory: `.git`, or where a worktree's or submodule's `.git` file
    /// points; nil when the sources are not a checkout.
    static func gitDirectory(of root: URL) -> URL? {
        let dotGit = root.appendingPathComponent(".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { return dotGit }
        guard let text = try? String(contentsOf: dotGit, encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("gitdir: ") else { return nil }
        let path = line.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespaces)
        return path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appendingPathComponent(path)
    }

    /// `sh -c script commit-stamp ROOT OUT`. SwiftPM runs it with an empty environment, hence
    /// PATH. Without a git that answers (none installed, or it refuses a checkout another user
    /// owns), a plain `.git` directory's HEAD is read as git would.
    static let script = #"""
    root=$1 out=$2
    PATH=/usr/local/bin:/usr/bin:/bin${PATH:+:$PATH}
    commit=
    if [ -e "$root/.git" ]; then
        commit=$(git -C "$root" rev-parse --verify --quiet HEAD 2>/dev/null) || commit=
        if [ -z "$commit" ] && [ -f "$root/.git/HEAD" ]; then
            read -r head < "$root/.git/HEAD"
            case $head in
            "ref: "*)
                ref=${head#ref: }
                if [ -f "$root/.git/$ref" ]; then read -r commit < "$root/.git/$ref"
                else commit=$(sed -n "s| $ref\$||p" "$root/.git/packed-refs" 2>/dev/null); fi ;;
            *) commit=$head ;;
            esac
        fi
    fi
    case $commit in
    "" | *[!0-9a-f]*) value=nil ;;
    *) value="\"$commit\"" ;;
    esac
    text="// Written by the CommitStamp plugin when HEAD moves.
    enum BuildStamp {
        /// The commit this binary was built from; nil when it was built without git.
        static let commit: String? = $value
    }"
    [ "$(cat "$out" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" > "$out"
    """#
}
