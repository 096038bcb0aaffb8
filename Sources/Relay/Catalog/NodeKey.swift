public import Foundation
import Crypto
import Wire

/// The node's Ed25519 signing key: what signs evidence (an incident's bundle) so that it
/// proves itself away from the node, to anyone holding the public key
/// (`GET /api/keys`, `liverelay keys`). Made at the first start in the state directory
/// (`node-ed25519.key`, the 32-byte seed in base64, mode 0600) and kept.
public struct NodeKey: Sendable {
    private let key: Curve25519.Signing.PrivateKey

    /// The public key, raw (32 bytes), in base64: what `verify-export --key` takes.
    public var publicKey: String { key.publicKey.rawRepresentation.base64EncodedString() }
    /// A short name for the key: the first 16 hex digits of its public key's SHA-256.
    public var id: String { Self.id(of: key.publicKey.rawRepresentation) }

    public static let fileName = "node-ed25519.key"

    init(key: Curve25519.Signing.PrivateKey) { self.key = key }

    /// A key of its own, not kept (tests; a node with no writable state directory).
    public static func ephemeral() -> NodeKey { NodeKey(key: Curve25519.Signing.PrivateKey()) }

    /// The key in `directory`, made there when it has none.
    public static func loadOrCreate(directory: String) throws -> NodeKey {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if FileManager.default.fileExists(atPath: path) {
            let text = String(try String(contentsOfFile: path, encoding: .utf8).trimmingASCIISpaces())
            guard let seed = Data(base64Encoded: text), seed.count == 32,
                  let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed) else {
                throw NodeKeyError("\(path): not an Ed25519 key (32 bytes in base64)")
            }
            return NodeKey(key: key)
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = Curve25519.Signing.PrivateKey()
        let text = key.rawRepresentation.base64EncodedString() + "\n"
        // Made with mode 0600 before the secret is written, then moved into place.
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw NodeKeyError("\(path): cannot be written (\(String(cString: strerror(errno))))") }
        let written = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        fsync(fd)
        close(fd)
        guard written == text.utf8.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw NodeKeyError("\(path): cannot be written")
        }
        return NodeKey(key: key)
    }

    /// The Ed25519 signature of `message`, in base64.
    public func sign(_ message: some DataProtocol) throws -> String {
        try key.signature(for: message).base64EncodedString()
    }

    /// The id of a public key given in base64 (nil: not 32 bytes of base64).
    public static func id(ofBase64 publicKey: String) -> String? {
        guard let raw = Data(base64Encoded: String(publicKey.trimmingASCIISpaces())), raw.count == 32 else { return nil }
        return id(of: raw)
    }

    /// Whether `signature` (base64) is `publicKey`'s (base64, 32 bytes raw) over `message`.
    public static func verify(_ signature: String, of message: some DataProtocol, publicKey: String) -> Bool {
        guard let raw = Data(base64Encoded: publicKey), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw),
              let sig = Data(base64Encoded: signature) else { return false }
        return key.isValidSignature(sig, for: message)
    }

    /// The id of a raw public key (see ``id``).
    public static func id(of publicKey: some DataProtocol) -> String {
        String(SHA256Stream.hexString(SHA256.hash(data: publicKey)).prefix(16))
    }
}

public struct NodeKeyError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
