import ArgumentParser
import Foundation
import Glibc
import MediaCore

@main
struct LiveRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liverelay",
        abstract: "Relays live video with the lowest latency a user can get.",
        version: LiveRelayCommand.version,
        subcommands: [ServeCommand.self, ProbeCommand.self, PublishCommand.self, PasswordCommand.self, BenchCommand.self, RecordingsCommand.self, KeysCommand.self, ONVIFCommand.self,
                      ConfigCommand.self, SignCommand.self]
    )

    /// `liverelay --version`: the program's version, FFmpeg's libraries, and the hardware this
    /// FFmpeg can use (built in; whether it works here, `probe` says per source).
    static var version: String {
        let hw = FFmpegInfo.hardwareCodecs
        var lines = ["liverelay \(release) (commit \(BuildCommit.current ?? "unknown: built without git"))"]
        lines.append("FFmpeg: " + FFmpegInfo.libraries.map { "\($0.name) \($0.version)" }.joined(separator: ", "))
        lines.append("hardware devices: " + (FFmpegInfo.hardwareDevices.isEmpty ? "none" : FFmpegInfo.hardwareDevices.joined(separator: ", ")))
        lines.append("hardware decoders: " + (hw.decoders.isEmpty ? "none" : hw.decoders.joined(separator: ", ")))
        lines.append("hardware encoders: " + (hw.encoders.isEmpty ? "none" : hw.encoders.joined(separator: ", ")))
        return lines.joined(separator: "\n")
    }

    static let release = "0.3.0"


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
                LoggingSetup.usageError(fullMessage(for: error), arguments: CommandLine.arguments)
                Glibc.exit(2)
            }
            exit(withError: error)
        }
    }
}
