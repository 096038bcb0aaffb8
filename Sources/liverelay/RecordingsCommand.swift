import ArgumentParser
import Relay
import Catalog
import Foundation

struct RecordingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordings",
        abstract: "The recordings' catalog.",
        subcommands: [Verify.self]
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

        func run() async throws {
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
                if let finding = ChainVerifier.verify(stream: s, chain: chain) {
                    print("\(s): \(finding)")
                    failed = true
                } else {
                    print("\(s): \(chain.count) segments verified, chain intact")
                }
            }
            await catalog.close()
            if failed { throw ExitCode(1) }
        }
    }
}
