/// The commit this binary was built from, as `--version` says it: stamped in at build time by
/// the CommitStamp plugin (`Plugins/CommitStamp`, which writes `BuildStamp`), so it is known
/// wherever the binary is copied or installed; nil when the sources were built without git
/// (a source archive, a container build that left `.git` out).
enum BuildCommit {
    static var current: String? { BuildStamp.commit.map { String($0.prefix(12)) } }
}
