import Wire
internal import CWebRTC
import Foundation

/// What went wrong in WebRTC's cryptography, in one line.
public struct WebRTCError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ d: String) { description = d }

    /// OpenSSL's error queue, drained into one line.
    static func openSSL(_ what: String) -> WebRTCError {
        var reasons: [String] = []
        while true {
            let e = ERR_get_error()
            guard e != 0 else { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buf, buf.count)
            if reasons.count < 3 { reasons.append(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        }
        return WebRTCError(reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))")
    }
}

/// The server's DTLS identity: an ECDSA P-256 key and a self-signed certificate, made at start.
/// A WebRTC peer trusts it by the SHA-256 fingerprint the SDP answer carries.
final class DTLSIdentity: @unchecked Sendable {
    // Safety: immutable after init; OpenSSL's SSL_CTX is safe to share once configured.
    let context: OpaquePointer
    /// `sha-256 AB:CD:…`, as the SDP's `a=fingerprint:` writes it.
    let fingerprint: String

    init() throws(WebRTCError) {
        guard let key = lr_ec_p256_key() else { throw .openSSL("EC key") }
        defer { EVP_PKEY_free(key) }
        guard let cert = lr_self_signed(key, "LiveRelay", Int.random(in: 1...Int(Int32.max)), 30) else { throw .openSSL("certificate") }
        defer { X509_free(cert) }
        fingerprint = "sha-256 " + Self.digest(cert)
        guard let ctx = SSL_CTX_new(DTLS_method()) else { throw .openSSL("SSL_CTX_new") }
        context = ctx
        guard SSL_CTX_use_certificate(ctx, cert) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1 else { throw .openSSL("certificate") }
        // SSL_CTX_set_tlsext_use_srtp returns 0 on success. AES-GCM first (RFC 7714): with
        // Debian's libsrtp2 it protects a packet in a quarter of AES-CM + HMAC-SHA1's time;
        // OpenSSL's server takes its own first choice that the peer offers.
        guard SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") == 0 else { throw .openSSL("use_srtp") }
        // The peer's certificate is self-signed too: taken here, checked against its fingerprint.
        lr_ssl_ctx_verify_peer_any(ctx)
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(DTLS1_2_VERSION), nil)
    }

    deinit { SSL_CTX_free(context) }

    /// SHA-256 of a certificate, hex pairs with colons.
    static func digest(_ cert: OpaquePointer) -> String {
        var md = [UInt8](repeating: 0, count: 64)
        var n: UInt32 = 0
        X509_digest(cert, EVP_sha256(), &md, &n)
        return Hex.encode(md.prefix(Int(n)), uppercase: true, separator: ":")
    }
}

/// The SRTP protection profile DTLS agreed (RFC 5764 §4.1.2, RFC 7714 §14.2).
enum SRTPProfile: Sendable {
    /// SRTP_AES128_CM_HMAC_SHA1_80: a 16-byte key and a 14-byte salt.
    case aesCM128HMACSHA1_80
    /// SRTP_AEAD_AES_128_GCM: a 16-byte key and a 12-byte salt.
    case aeadAES128GCM

    var saltLength: Int { self == .aeadAES128GCM ? 12 : 14 }
    /// The profile's name in logs (RFC 7714 §14.2, RFC 5764 §4.1.2).
    var name: String { self == .aeadAES128GCM ? "AEAD_AES_128_GCM" : "AES_CM_128_HMAC_SHA1_80" }
}

/// The keys DTLS-SRTP gives each direction (RFC 5764 §4.2): AES-128 key then salt.
struct SRTPKeys {
    let profile: SRTPProfile
    /// This side's sending key and salt, and the peer's.
    let local: [UInt8]
    let remote: [UInt8]
}

/// One peer's DTLS association, the server side, over memory: datagrams in, datagrams out.
/// LiveRelay is passive (`a=setup:passive`); the browser starts the handshake. Confined to the
/// session's lock.
final class DTLSTransport: @unchecked Sendable {
    // Safety: used only under its session's lock.
    private let ssl: OpaquePointer
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    /// The fingerprint the peer's SDP promised (`sha-256 AB:…`).
    private let expected: String
    private(set) var isConnected = false
    private(set) var isClosed = false
    /// The client's side (the bench's load viewers); LiveRelay itself is always the server.
    private let isClient: Bool

    init(identity: DTLSIdentity, peerFingerprint: String, client: Bool = false) throws(WebRTCError) {
        guard let ssl = SSL_new(identity.context) else { throw .openSSL("SSL_new") }
        guard let rb = BIO_new(BIO_s_mem()), let wb = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .openSSL("BIO_new")
        }
        lr_bio_set_mem_eof_return(rb, -1)
        SSL_set_bio(ssl, rb, wb)
        if client { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
        _ = lr_ssl_set_mtu(ssl, 1200)
        self.ssl = ssl
        incoming = rb
        outgoing = wb
        expected = peerFingerprint
        isClient = client
    }

    /// The client's first flight (ClientHello).
    func start() -> [UInt8] {
        guard isClient else { return [] }
        _ = SSL_do_handshake(ssl)
        return drain()
    }

    deinit { SSL_free(ssl) }

    /// Feeds one datagram from the peer; returns what to send back and, once the handshake
    /// completes, the SRTP keys (once).
    func receive(_ bytes: [UInt8]) throws(WebRTCError) -> (send: [UInt8], keys: SRTPKeys?) {
        guard !isClosed, !bytes.isEmpty, bytes.count <= 65_535 else { return ([], nil) }
        _ = bytes.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        var keys: SRTPKeys?
        if !isConnected {
            let r = SSL_do_handshake(ssl)
            if r == 1 {
                keys = try finish()
            } else {
                let e = SSL_get_error(ssl, r)
                if e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE {
                    isClosed = true
                    throw .openSSL("DTLS handshake")
                }
            }
        } else {
            // Alerts (close_notify) and anything else after the handshake.
            var scratch = [UInt8](repeating: 0, count: 2048)
            let n = SSL_read(ssl, &scratch, Int32(scratch.count))
            if n <= 0 && SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN { isClosed = true }
        }
        return (drain(), keys)
    }

    /// Retransmits the last flight when its timer ran out; what to send.
    func tick() -> [UInt8] {
        guard !isConnected, !isClosed else { return [] }
        _ = lr_dtls_handle_timeout(ssl)
        return drain()
    }

    private func drain() -> [UInt8] {
        let n = lr_bio_pending(outgoing)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: n)
        let got = BIO_read(outgoing, &out, Int32(n))
        return got > 0 ? Array(out.prefix(Int(got))) : []
    }

    private func finish() throws(WebRTCError) -> SRTPKeys {
        guard let cert = SSL_get1_peer_certificate(ssl) else {
            isClosed = true
            throw WebRTCError("DTLS: the peer sent no certificate")
        }
        defer { X509_free(cert) }
        let got = "sha-256 " + DTLSIdentity.digest(cert)
        guard got == expected else {
            isClosed = true
            throw WebRTCError("DTLS: the peer's certificate does not match the fingerprint in its offer")
        }
        let profile: SRTPProfile
        switch SSL_get_selected_srtp_profile(ssl)?.pointee.id {
        case UInt(SRTP_AEAD_AES_128_GCM): profile = .aeadAES128GCM
        case UInt(SRTP_AES128_CM_SHA1_80): profile = .aesCM128HMACSHA1_80
        default:
            isClosed = true
            throw WebRTCError("DTLS: no SRTP profile agreed")
        }
        let salt = profile.saltLength, total = 2 * (16 + salt)
        var material = [UInt8](repeating: 0, count: total)
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, total, label, label.utf8.count, nil, 0, 0) == 1 else {
            isClosed = true
            throw .openSSL("DTLS keying material")
        }
        isConnected = true
        // client key | server key | client salt | server salt.
        let client = Array(material[0..<16] + material[32..<(32 + salt)]), server = Array(material[16..<32] + material[(32 + salt)..<total])
        return isClient ? SRTPKeys(profile: profile, local: client, remote: server) : SRTPKeys(profile: profile, local: server, remote: client)
    }
}
