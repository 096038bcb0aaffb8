import Foundation
import Glibc
public import MediaCore

/// A camera's ONVIF audio backchannel (ONVIF Streaming Specification §5.3): the `sendonly`
/// audio section of its description, SETUP on the session that reads it, and RTP sent to it
/// interleaved in the RTSP connection or over UDP to the port its SETUP answer named. Made by
/// `RTSPSource`, closed when that session ends; sent on from a talk session's thread (an event
/// loop's: a send never waits).
public final class Backchannel: TalkTarget, @unchecked Sendable {
    // Safety: `path` is read and cleared under `lock`; a send holds it, so a closed socket is
    // never written to.
    public let talkFormat: TalkFormat

    enum Path {
        /// `$`, the channel, a 16-bit length, the packet (RFC 2326 §10.12).
        case interleaved(TCPLink, channel: UInt8)
        case udp(fd: Int32, to: sockaddr_storage)
    }

    private let lock = NSLock()
    private var path: Path?

    init(format: TalkFormat, path: Path) {
        talkFormat = format
        self.path = path
    }

    public var isClosed: Bool { lock.withLock { path == nil } }

    func close() { lock.withLock { path = nil } }

    public func sendTalk(_ rtp: [UInt8]) -> Bool {
        guard rtp.count <= 0xFFFF else { return false }
        return lock.withLock { () -> Bool in
            switch path {
            case nil:
                return false
            case .interleaved(let link, let channel)?:
                // Never waits: a camera that does not read its socket, or a request on its way,
                // costs this packet; a frame cut in half costs the session (it is read again).
                switch link.trySend([0x24, channel, UInt8(rtp.count >> 8), UInt8(rtp.count & 0xFF)] + rtp) {
                case .sent: return true
                case .busy: return false
                case .broken:
                    path = nil
                    return false
                }
            case .udp(let fd, var to)?:
                let len = socklen_t(Int32(to.ss_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
                let n = rtp.withUnsafeBytes { b in
                    withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, len) } }
                }
                return n == rtp.count
            }
        }
    }

    /// `peer` with its port set to `port`.
    static func address(_ peer: sockaddr_storage, port: UInt16) -> sockaddr_storage {
        var to = peer
        if Int32(to.ss_family) == AF_INET6 {
            withUnsafeMutableBytes(of: &to) { $0.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = port.bigEndian }
        } else {
            withUnsafeMutableBytes(of: &to) { $0.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = port.bigEndian }
        }
        return to
    }
}
