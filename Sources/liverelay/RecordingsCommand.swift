import ArgumentParser
import Relay
import Catalog
import Foundation

struct RecordingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordings",
        abstract: "The recordings' catalog.",
        subcommands: [Verify.self, VerifyExport.self, Reindex.self]
    )

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-hash the recording files against the catalog's chain; name the first missing, altered or extra file."
        )

        @Option(help: "Configuration file (its catalog.path, if set).")
        var config: String?

        @Option(help: "The state directory serve uses (the catalog, unless catalog.path says otherwise).")
        var stateDir: String = "/var/lib/liverelay"

        @Option(help: "Only this stream (default: every recorded stream).")
        var stream: String?

        @Option(help: "Re-hash only the files from this time on (RFC 3339); the chain is still followed from its start.")
        var start: String?

        @Option(help: "Re-hash only the files up to this time (RFC 3339).")
        var end: String?

        func run() async throws {
            var within: ClosedRange<Date>?
            if start != nil || end != nil {
                let f = ISO8601DateFormatter()
                let from = start.map { f.date(from: $0) } ?? .distantPast, to = end.map { f.date(from: $0) } ?? .distantFuture
                guard let from, let to, from <= to else {
                    FileHandle.standardError.write(Data("liverelay: --start and --end are RFC 3339 times (2026-11-25T14:32:00Z), start first\n".utf8))
                    throw ExitCode(2)
                }
                within = from...to
            }
            var path = (stateDir as NSString).appendingPathComponent("catalog.sqlite")
            if let config {
                do {
                    if let p = try Configuration.load(file: config, sources: .liverelay).catalogPath { path = p }
                } catch {
                    FileHandle.standardError.write(Data("liverelay: \(error)\n".utf8))
                    throw ExitCode(2)
                }
            }
            guard FileManager.default.fileExists(atPath: path) else {
                FileHandle.standardError.write(Data("liverelay: no catalog at \(path)\n".utf8))
                throw ExitCode(2)
            }
            let catalog = try await SQLiteCatalog.open(path: path)
            let streams: [String]
            if let stream { streams = [stream] } else { streams = try await catalog.recordedStreams() }
            var failed = false
            for s in streams {
                let chain = try await catalog.chain(stream: s)
                if let finding = ChainVerifier.verify(stream: s, chain: chain, within: within) {
                    print("\(s): \(finding)")
                    failed = true
                } else {
                    let hashed = within.map { w in chain.filter { $0.deletedAt == nil && $0.start <= w.upperBound && $0.end >= w.lowerBound }.count } ?? chain.count
                    print("\(s): \(chain.count) segments verified, chain intact\(within == nil ? "" : " (\(hashed) files in the range re-hashed)")")
                }
            }
            await catalog.close()
            if failed { throw ExitCode(1) }
        }
    }

    struct VerifyExport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify-export",
            abstract: "Check an incident's evidence bundle with the node's public key (BUNDLE --key KEY), or a clip against its manifest (CLIP MANIFEST).",
            discussion: """
            With --key, BUNDLE is an incident's evidence bundle (GET /api/incidents/ID/export). It \
            is checked with no catalog and no node: the manifest's Ed25519 signature against KEY \
            (base64, as GET /api/keys and `liverelay keys` give it, or a file holding it), then \
            every file it lists, piece by piece, and each segment's hash-chain link. Exit 0: it \
            proves itself; 1: the first thing that does not (an unreadable bundle too), named; 2: \
            an unreadable key file.
            """
        )

        @Argument(help: "The evidence bundle (with --key), or the clip (recording.mp4).") var file: String
        @Argument(help: "The clip's manifest (recording.json); not with --key.") var manifest: String?
        @Option(help: "The node's public key (base64), or a file holding it: BUNDLE is an evidence bundle.") var key: String?

        func run() async throws {
            if let key {
                guard manifest == nil else { throw ValidationError("a bundle carries its own manifest: give BUNDLE --key KEY") }
                var text = key
                if FileManager.default.fileExists(atPath: key) {
                    guard let read = try? String(contentsOfFile: key, encoding: .utf8) else {
                        FileHandle.standardError.write(Data("liverelay: cannot read the key file \(key)\n".utf8))
                        throw ExitCode(2)
                    }
                    text = read
                }
                switch EvidenceBundle.verify(path: file, publicKey: text) {
                case .success(let m):
                    let pieces = m.files.map(\.clip.pieces.count).reduce(0, +)
                    let links = m.files.map { $0.clip.segments.filter { $0.previousChain != nil }.count }.reduce(0, +)
                    let said = "signed by key \(NodeKey.id(ofBase64: m.key.publicKey) ?? "?") of node \(m.node); incident \(m.incident.id) (\(m.incident.title)), "
                        + "\(m.files.count) files, \(pieces) pieces and \(links) chain links verified"
                        + (m.missing.isEmpty ? "" : "; nothing of " + m.missing.map { "\($0.stream) (\($0.why))" }.joined(separator: ", "))
                    print("\(file): " + EvidenceBundle.printable(said, limit: 1000))
                case .failure(let f):
                    print("\(file): \(f)")
                    throw ExitCode(1)
                }
                return
            }
            guard let manifest else { throw ValidationError("give CLIP MANIFEST, or BUNDLE --key KEY") }
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            let m: ExportManifest
            do {
                m = try decoder.decode(ExportManifest.self, from: try Data(contentsOf: URL(fileURLWithPath: manifest)))
            } catch {
                FileHandle.standardError.write(Data("liverelay: \(manifest) is not an export manifest: \(error)\n".utf8))
                throw ExitCode(2)
            }
            if let finding = m.check(clip: file) {
                print("\(file): \(finding)")
                throw ExitCode(1)
            }
            print("\(file): \(m.pieces.count) pieces verified against the manifest (\(m.stream), \(m.start) to \(m.end), \(m.segments.count) segments of node \(m.node))")
        }
    }

    struct Reindex: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild the recording index from the files (each stream's record.path in the configuration); files already catalogued are kept."
        )

        @Option(help: "Configuration file: its streams' record paths, and its catalog.path if set.")
        var config: String

        @Option(help: "The state directory serve uses (the catalog, unless catalog.path says otherwise).")
        var stateDir: String = "/var/lib/liverelay"

        func run() async throws {
            let c: Configuration
            do {
                c = try Configuration.load(file: config, sources: .liverelay)
            } catch {
                FileHandle.standardError.write(Data("liverelay: \(error)\n".utf8))
                throw ExitCode(2)
            }
            let path = c.catalogPath ?? (stateDir as NSString).appendingPathComponent("catalog.sqlite")
            let catalog = try await SQLiteCatalog.open(path: path)
            let streams = c.streams.compactMap { s in s.record.map { (name: s.name, directory: $0.path) } }
            let report = try await RecordingReindex.run(catalog: catalog, streams: streams)
            await catalog.close()
            for p in report.unreadable { print("not a readable recording, left out: \(p)") }
            print("\(report.added.count) files catalogued anew (their chain begins here), \(report.skipped.count) already catalogued, \(report.unreadable.count) unreadable")
            if !report.unreadable.isEmpty { throw ExitCode(1) }
        }
    }
}
