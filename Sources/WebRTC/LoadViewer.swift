import Foundation
import Crypto
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// A WHEP viewer small enough to run by the hundred on one machine, for the bench (`bench
/// webrtc --load`): it offers H.264, nominates the server's candidate with one ICE check (and
/// keeps consent with one every 2 s), does the DTLS client's handshake with OpenSSL, then
/// decrypts every packet with libsrtp2 and counts what arrived and what is missing by sequence
/// number. It never decodes. The product does not use it.
package final class LoadViewer: @unchecked Sendable {
    // Safety: `run` is called once, on one thread; the rest is immutable.

    /// What a viewer saw.
    package struct Tally: Sendable {
        package var connected = false
        package var packets = 0
        package var bytes = 0
        /// Sequence numbers skipped (per SSRC, after the first packet): lost or never sent.
        package var missing = 0
        package var senderReports = 0
        package var error: String?
    }

    private let identity: DTLSIdentity
    package let ufrag = LoadViewer.token(8)
    package let pwd = LoadViewer.token(24)

    /// Viewers share one certificate (`LoadViewer.Certificate`): making one per viewer costs a
    /// key generation each.
    package final class Certificate: @unchecked Sendable {
        let identity: DTLSIdentity
        package init() throws { identity = try DTLSIdentity() }
    }

    package init(certificate: Certificate) { identity = certificate.identity }

    /// The SDP offer: receive-only H.264 (packetization mode 1, the usual profiles), NACK,
    /// rtcp-mux, DTLS active.
    package var offer: String {
        var d = SessionDescription(origin: .init(sessionID: 1, sessionVersion: 1))
        d.bundle = ["0"]
        var m = SessionDescription.Media(kind: "video", port: 9, proto: "UDP/TLS/RTP/SAVPF")
        m.connection = "IN IP4 0.0.0.0"
        m.mid = "0"
        m.iceUfrag = ufrag
        m.icePwd = pwd
        m.fingerprint = identity.fingerprint
        m.setup = "active"
        m.rtcpMux = true
        m.direction = "recvonly"
        for (pt, profile) in [(102, "42e01f"), (104, "4d001f"), (106, "64001f")] {
            m.formats.append(SessionDescription.Format(payloadType: pt, codec: "h264", clockRate: 90000,
                                                       parameters: ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": profile],
                                                       feedback: ["nack", "nack pli"]))
        }
        d.media = [m]
        return d.text
    }

    /// Connects with the server's `answer` and counts what arrives for `seconds`.
    package func run(answer: String, seconds: Double) -> Tally {
        var tally = Tally()
        guard let sdp = SessionDescription(parsing: answer), let media = sdp.media.first, let server = sdp.credentials(media),
              let candidate = sdp.media.flatMap(\.candidates).first(where: { $0.transport == "udp" }) else {
            tally.error = "no ICE credentials or UDP candidate in the answer"
            return tally
        }
        let fingerprint = sdp.fingerprint(media) ?? "", host = candidate.address, port = candidate.port
        let serverUfrag = server.ufrag, serverPwd = server.pwd
        let fd: Int32
        switch ConnectedUDP.open(host: host, port: port, receiveTimeoutMicros: 100_000, receiveBuffer: 1 << 20) {
        case .success(let f): fd = f
        case .failure(let e): tally.error = e.description; return tally
        }
        defer { close(fd) }
        func send(_ b: [UInt8]) { _ = b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } }
        let key = SymmetricKey(data: Array(serverPwd.utf8))
        func check() {
            var tid = [UInt8](repeating: 0, count: 12)
            for i in tid.indices { tid[i] = UInt8.random(in: 0...255) }
            let m = STUNMessage(type: STUNMessage.bindingRequest, transactionID: tid, attributes: [
                (STUNMessage.Attribute.username, Array("\(serverUfrag):\(ufrag)".utf8)),
                (STUNMessage.Attribute.priority, [0x6E, 0x7F, 0x1E, 0xFF]),
                (STUNMessage.Attribute.iceControlling, (0..<8).map { _ in UInt8.random(in: 0...255) }),
                (STUNMessage.Attribute.useCandidate, []),
            ])
            send(m.serialized(integrity: { Array(HMAC<Insecure.SHA1>.authenticationCode(for: $0, using: key)) }))
        }
        let dtls: DTLSTransport
        do { dtls = try DTLSTransport(identity: identity, peerFingerprint: fingerprint, client: true) } catch { tally.error = "\(error)"; return tally }
        var inbound: SRTPSession?
        var lastSeq: [UInt32: UInt16] = [:]
        var buffer = [UInt8](repeating: 0, count: 2048)
        let start = Date(), end = start.addingTimeInterval(seconds)
        var lastCheck = Date.distantPast, startedDTLS = false
        while Date() < end {
            if Date().timeIntervalSince(lastCheck) > (tally.connected ? 2 : 0.2) {
                check()
                lastCheck = Date()
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 {
                if !tally.connected {
                    if Date().timeIntervalSince(start) > 10 { tally.error = "not connected within 10 s"; return tally }
                    if startedDTLS { let out = dtls.tick(); if !out.isEmpty { send(out) } }
                }
                continue
            }
            let b = Array(buffer[0..<n])
            switch b[0] {
            case 0...3:
                // The check's answer: the path is up, the client starts DTLS.
                if !startedDTLS, STUNMessage(parsing: b)?.type == STUNMessage.bindingSuccess {
                    startedDTLS = true
                    send(dtls.start())
                }
            case 20...63:
                do {
                    let r = try dtls.receive(b)
                    if !r.send.isEmpty { send(r.send) }
                    if let keys = r.keys {
                        inbound = try SRTPSession(key: keys.remote, outbound: false, profile: keys.profile)
                        tally.connected = true
                    }
                } catch {
                    tally.error = "\(error)"
                    return tally
                }
            case 128...191:
                guard let inbound else { continue }
                if RTCPMessage.isRTCP(b) {
                    if let plain = inbound.unprotectRTCP(b), RTCPMessage.parse(plain).contains(where: { if case .senderReport = $0 { true } else { false } }) {
                        tally.senderReports += 1
                    }
                    continue
                }
                guard let plain = inbound.unprotect(b), plain.count >= 12 else { continue }
                tally.packets += 1
                tally.bytes += plain.count
                let ssrc = UInt32(plain[8]) << 24 | UInt32(plain[9]) << 16 | UInt32(plain[10]) << 8 | UInt32(plain[11])
                let seq = UInt16(plain[2]) << 8 | UInt16(plain[3])
                if let last = lastSeq[ssrc] {
                    let step = seq &- last
                    if step > 1 && step < 0x8000 { tally.missing += Int(step - 1) }
                    if step >= 1 && step < 0x8000 { lastSeq[ssrc] = seq }
                } else {
                    lastSeq[ssrc] = seq
                }
            default:
                continue
            }
        }
        return tally
    }

    static func token(_ n: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<n).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }
}
