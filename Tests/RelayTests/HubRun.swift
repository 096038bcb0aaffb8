import Relay

extension StreamHub {
    /// Starts `output`, then the hub; after `seconds`, stops the hub, then the output (which
    /// finishes what it took).
    func run(with output: any StreamOutput, for seconds: Double) async throws {
        output.start()
        start()
        try await Task.sleep(for: .seconds(seconds))
        await stop()
        await output.stop()
    }
}
