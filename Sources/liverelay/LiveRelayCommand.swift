import ArgumentParser
import Foundation
import Glibc

@main
struct LiveRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liverelay",
        abstract: "Relays live video with the lowest latency a user can get.",
        subcommands: [ServeCommand.self, ProbeCommand.self, PublishCommand.self, PasswordCommand.self, BenchCommand.self, RecordingsCommand.self]
    )

    /// Usage errors exit 2 (as most Unix tools do), not ArgumentParser's 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Glibc.exit(2)
            }
            exit(withError: error)
        }
    }
}
