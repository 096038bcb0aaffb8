import ArgumentParser

@main
struct LiveRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liverelay",
        abstract: "Relays live video with the lowest latency a user can get.",
        subcommands: [ProbeCommand.self, PublishCommand.self]
    )
}
