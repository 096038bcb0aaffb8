import ArgumentParser
import Foundation
import HummingbirdBcrypt

struct PasswordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "password",
        abstract: "Read a password on stdin and print its bcrypt hash, for auth.users[].password."
    )

    @Option(help: "bcrypt cost (work factor), 10 to 16.")
    var cost: UInt8 = 12

    func run() throws {
        guard (10...16).contains(cost) else { throw ValidationError("--cost: expected 10 to 16") }
        // One line; the newline is not part of the password.
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw ValidationError("no password on stdin (e.g. `printf %s \"$PW\" | liverelay password`)")
        }
        print(Bcrypt.hash(line, cost: cost))
    }
}
