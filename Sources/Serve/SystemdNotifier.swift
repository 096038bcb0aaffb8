import Foundation
import Glibc

/// systemd's readiness protocol (sd_notify(3)): one datagram per state to the socket named by
/// `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace). Without that variable (not
/// run by systemd with `Type=notify`) every call does nothing.
public enum SystemdNotifier {
    /// The server listens: `READY=1` and a status line.
    public static func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    /// A SIGHUP's reload begins (`RELOADING=1` with the monotonic time systemd asks for).
    public static func reloading() {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        let usec = UInt64(max(0, t.tv_sec)) &* 1_000_000 &+ UInt64(max(0, t.tv_nsec) / 1000)
        send("RELOADING=1\nMONOTONIC_USEC=\(usec)")
    }
    /// The reload is done.
    public static func reloaded(status: String) { send("READY=1\nSTATUS=\(status)") }
    /// A graceful stop begins.
    public static func stopping() { send("STOPPING=1") }

    /// Sends one message; false when there is no socket or the send failed.
    @discardableResult
    public static func send(_ message: String) -> Bool {
        guard let path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !path.isEmpty else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // An abstract socket's name starts with a NUL byte where the variable has '@'.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
        return sent == payload.count
    }
}
