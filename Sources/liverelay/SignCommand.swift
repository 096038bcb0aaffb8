import ArgumentParser
import Foundation
import Relay
import Access

struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print a signed media URL of a stream (auth.signed_urls): readable without credentials until it expires, through any cache."
    )

    @Option(help: "Configuration file (YAML) with auth.signed_urls.secret.")
    var config: String = "configs/demo.yaml"

    @Option(help: "The stream.")
    var stream: String

    @Option(help: "Seconds the URL is good for.")
    var ttl: Int = 600

    @Option(help: "Round the expiry up to a multiple of this many seconds, so that viewers given URLs within that time share one URL (and one cache entry).")
    var round: Int = 60

    @Option(help: "The URL to sign (e.g. https://edge.example/streams/cam/hls/index.m3u8); without it only the query is printed.")
    var url: String?

    func run() throws {
        guard (1...31_536_000).contains(ttl), (1...86_400).contains(round) else { throw ValidationError("--ttl: 1 s to a year; --round: 1 s to a day") }
        let c: Configuration
        do { c = try Configuration.load(file: config, sources: .liverelay) } catch { throw ValidationError("\(error)") }
        guard let secret = c.auth?.signedURLSecret else { throw ValidationError("\(config): auth.signed_urls.secret: missing") }
        guard Configuration.isStreamName(stream) else { throw ValidationError("--stream: letters, digits, - and _ only") }
        let now = Int(Date().timeIntervalSince1970)
        let expires = (now + ttl + round - 1) / round * round
        let query = "expires=\(expires)&signature=\(Authorizer.signature(stream: stream, expires: expires, secret: secret))"
        if let url {
            print(url + (url.contains("?") ? "&" : "?") + query)
        } else {
            print(query)
        }
    }
}
