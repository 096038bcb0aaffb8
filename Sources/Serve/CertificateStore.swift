import Logging
import NIOCore
import NIOSSL
import Relay
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The server's certificate chain and key, read from PEM files and read again on SIGHUP: every
/// new TLS handshake takes the current pair (NIOSSL's context callback), connections already
/// open keep theirs. A renewed certificate (Let's Encrypt) goes live without dropping a viewer.
final class CertificateStore: Sendable {
    let settings: TLSSettings
    private let current: Mutex<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

    init(_ settings: TLSSettings) throws {
        self.settings = settings
        current = Mutex(try Self.load(settings))
    }

    static func load(_ tls: TLSSettings) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(tls.certificate)
            guard !chain.isEmpty else { throw TLSSetupError(description: "no certificate in the file") }
        } catch {
            throw TLSSetupError(description: "server.tls.cert: cannot read a PEM certificate from \(tls.certificate): \(error)")
        }
        do {
            key = try NIOSSLPrivateKey(file: tls.key, format: .pem)
        } catch {
            throw TLSSetupError(description: "server.tls.key: cannot read a PEM private key from \(tls.key): \(error)")
        }
        return (chain, key)
    }

    /// Reads the files again; on any problem the pair in use stays (and the error is thrown).
    func reload() throws {
        let fresh = try Self.load(settings)
        current.withLock { $0 = fresh }
    }

    /// The configuration the server starts with; each handshake then asks for the current pair.
    func serverConfiguration() -> TLSConfiguration {
        let (chain, key) = current.withLock { $0 }
        var c = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        c.sslContextCallback = { [self] _, promise in
            let (chain, key) = current.withLock { $0 }
            var o = NIOSSLContextConfigurationOverride()
            o.certificateChain = chain.map { .certificate($0) }
            o.privateKey = .privateKey(key)
            promise.succeed(o)
        }
        return c
    }
}
