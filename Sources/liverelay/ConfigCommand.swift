import ArgumentParser
import Relay
import Serve
import Logging
import Foundation

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Configuration files.",
        subcommands: [Check.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The checks serve makes on a configuration, without starting anything: exit 0, or 2 with the key at fault."
        )

        @Argument(help: "The configuration file (YAML).")
        var file: String

        func run() async throws {
            let c: Configuration
            do {
                c = try Configuration.load(file: file, sources: .liverelay)
                try c.validateExposure(file: file)
                try await LiveRelayServer.check(c, logger: Logger(label: "liverelay.check"))
            } catch let e as ConfigError {
                // It names the file and the key itself.
                FileHandle.standardError.write(Data("liverelay: \(e)\n".utf8))
                throw ExitCode(2)
            } catch {
                FileHandle.standardError.write(Data("liverelay: \(file): \(error)\n".utf8))
                throw ExitCode(2)
            }
            let names = c.streams.map(\.name)
            print("\(file): ok, \(names.count) stream\(names.count == 1 ? "" : "s") (\(names.joined(separator: ", ")))")
        }
    }
}
