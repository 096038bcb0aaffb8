import ArgumentParser
import Relay
import Foundation

/// `liverelay keys`: the node's public key, what its evidence bundles are checked with.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Print the node's Ed25519 public key (base64): what `recordings verify-export --key` checks its evidence bundles with.",
        discussion: "`serve` makes the key at its first start, in its state directory (node-ed25519.key, mode 0600); GET /api/keys gives the same."
    )

    @Option(help: "The state directory serve was given.")
    var stateDir: String = "/var/lib/liverelay"

    func run() throws {
        let path = (stateDir as NSString).appendingPathComponent(NodeKey.fileName)
        guard FileManager.default.fileExists(atPath: path) else {
            throw ValidationError("no key in \(stateDir) yet: serve makes it at its first start")
        }
        let key: NodeKey
        do { key = try NodeKey.loadOrCreate(directory: stateDir) } catch { throw ValidationError("\(error)") }
        print("Ed25519 \(key.id) \(key.publicKey)")
    }
}
