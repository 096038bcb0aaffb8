internal import CWebRTC
import Synchronization

/// One direction of SRTP and SRTCP with libsrtp2, in the profile DTLS agreed (AES-128-GCM, or
/// AES-128 counter mode with HMAC-SHA1 80-bit tags): outbound protects what LiveRelay sends,
/// inbound checks and decrypts what the peer sends. Each instance is used under its owner's lock.
final class SRTPSession: @unchecked Sendable {
    // Safety: used only under its session's lock.
    private static let initialized: Bool = { srtp_init() == srtp_err_status_ok }()
    private var session: srtp_t?

    /// `key`: the 16-byte key then the profile's salt (14 bytes, or 12 for GCM), from DTLS.
    init(key: [UInt8], outbound: Bool, profile: SRTPProfile = .aesCM128HMACSHA1_80) throws(WebRTCError) {
        guard Self.initialized else { throw WebRTCError("libsrtp2 did not initialize") }
        guard key.count == 16 + profile.saltLength else { throw WebRTCError("SRTP: a key of \(key.count) bytes") }
        var policy = srtp_policy_t()
        switch profile {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aesCM128HMACSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        }
        policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = 1024
        // A NACK is answered with the same packet again.
        policy.allow_repeat_tx = 1
        var k = key
        var s: srtp_t?
        let r = k.withUnsafeMutableBufferPointer { buf -> srtp_err_status_t in
            policy.key = buf.baseAddress
            return srtp_create(&s, &policy)
        }
        guard r == srtp_err_status_ok, let s else { throw WebRTCError("SRTP: srtp_create failed (\(r.rawValue))") }
        session = s
    }

    deinit { if let session { srtp_dealloc(session) } }

    /// An RTP packet protected; nil when libsrtp refuses it.
    func protect(_ rtp: [UInt8]) -> [UInt8]? { run(rtp, grow: true, srtp_protect) }
    func protectRTCP(_ rtcp: [UInt8]) -> [UInt8]? { run(rtcp, grow: true, srtp_protect_rtcp) }
    /// The peer's SRTP or SRTCP, checked and decrypted; nil when it does not authenticate.
    func unprotect(_ srtp: [UInt8]) -> [UInt8]? { run(srtp, grow: false, srtp_unprotect) }
    func unprotectRTCP(_ srtcp: [UInt8]) -> [UInt8]? { run(srtcp, grow: false, srtp_unprotect_rtcp) }

    /// Room an RTP packet needs after it for protection (the authentication tag).
    static let trailer = Int(SRTP_MAX_TRAILER_LEN)

    /// Protects the RTP packet of `length` bytes at the start of `buffer` in place (the buffer
    /// has `trailer` bytes more); its protected length, nil when libsrtp refuses it.
    func protect(inPlace buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard let session, length >= 12, length + Self.trailer <= buffer.count, let base = buffer.baseAddress else { return nil }
        var n = Int32(length)
        guard srtp_protect(session, base, &n) == srtp_err_status_ok, n >= 0, Int(n) <= buffer.count else { return nil }
        return Int(n)
    }

    private func run(_ bytes: [UInt8], grow: Bool,
                     _ f: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t) -> [UInt8]? {
        guard let session, bytes.count >= 8, bytes.count <= 8192 else { return nil }
        var buf = bytes + [UInt8](repeating: 0, count: grow ? Int(SRTP_MAX_TRAILER_LEN) + 4 : 0)
        var n = Int32(bytes.count)
        let r = buf.withUnsafeMutableBytes { f(session, $0.baseAddress, &n) }
        guard r == srtp_err_status_ok, n >= 0, Int(n) <= buf.count else { return nil }
        buf.removeLast(buf.count - Int(n))
        return buf
    }
}
