import Foundation
import Glibc
import Demux
import MediaCore
import Relay
import Wire

/// The `rtsp` target's socket half (`RTSPWireFuzz` is the direct one): the bytes are what a
/// camera sends on its RTSP connection (answers and interleaved media), served from a loopback
/// socket to LiveRelay's own RTSP client opened through `SourceOpener` exactly as `serve`
/// opens a camera — the exchange, hedged DESCRIBE, header and SDP parsing, RTP depacketizing
/// and the probe all run as in production. `CSeq:` lines are renumbered 1, 2, 3… so that
/// answers meet their requests (the first byte's low bit asks for the ONVIF backchannel, whose
/// path, when set up, is sent a few talk packets; it once chose a reorder queue, and the corpus
/// keeps it).
enum RTSPCamera {
    static func serve(_ bytes: [UInt8]) {
        guard let (listener, port) = loopbackListener(backlog: 8) else { return }
        let answers = renumbered(Array(bytes.dropFirst()))
        let server = Thread {
            // One connection gets the bytes; the listener closes after it, so a hedged
            // connection is refused at once (the camera is gone) instead of waiting out the deadline.
            var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 2000) == 1 else { close(listener); return }
            let c = accept(listener, nil, nil)
            close(listener)
            guard c >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 4096)
            var cp = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            if poll(&cp, 1, 1000) == 1 { _ = recv(c, &request, request.count, 0) }
            var sent = 0
            while sent < answers.count {
                let n = answers.withUnsafeBytes { send(c, $0.baseAddress! + sent, answers.count - sent, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
            shutdown(c, Int32(SHUT_WR))
            usleep(50_000)
            close(c)
        }
        server.start()
        var o = SourceOptions()
        o.transport = .tcp
        o.openTimeout = 0.7
        o.readTimeout = 0.3
        o.ffmpegFallback = false
        o.backchannel = (bytes.first ?? 0) & 1 == 1
        guard let source = try? FuzzTargets.sources.open(url: "rtsp://127.0.0.1:\(port)/cam", options: o, interruptHandle: InterruptHandle()) else { return }
        if let talk = (source as? any TalkPathProviding)?.talkTarget {
            for k in 0..<3 { _ = talk.sendTalk(RTPPacket(payloadType: talk.talkFormat.payloadType, sequence: UInt16(k), timestamp: UInt32(k * 160), ssrc: 1,
                                                         payload: [UInt8](repeating: 0xFF, count: 160)[...]).bytes) }
        }
        var n = 0
        while n < 500, let p = try? source.readPacket() {
            _ = p.data.count
            n += 1
        }
    }

    /// `CSeq: …` at the start of a line becomes `CSeq: 1`, `CSeq: 2`, … in order.
    static func renumbered(_ b: [UInt8]) -> [UInt8] {
        let key = Array("cseq:".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0, next = 1
        while i < b.count {
            let lineStart = i == 0 || b[i - 1] == 10
            if lineStart, i + key.count <= b.count, zip(b[i..<(i + key.count)], key).allSatisfy({ ($0 | 0x20) == $1 }) {
                out += Array("CSeq: \(next)".utf8)
                next += 1
                i += key.count
                while i < b.count, b[i] != 13, b[i] != 10 { i += 1 }
                continue
            }
            out.append(b[i])
            i += 1
        }
        return out
    }
}

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks, and that port.
func loopbackListener(backlog: Int32) -> (Int32, UInt16)? {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard listener >= 0 else { return nil }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) == 0 && listen(listener, backlog) == 0 && getsockname(listener, $0, &len) == 0 }
    }
    guard bound else { close(listener); return nil }
    return (listener, UInt16(bigEndian: addr.sin_port))
}
