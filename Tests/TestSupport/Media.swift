public import Foundation
import MediaCore
import Demux
import Mux

/// Media the tests make themselves.
public enum TestMedia {
    /// Writes `frames` frames of the stamped test source to a file (container from the
    /// extension, or `format`).
    public static func writeFile(_ url: URL, frames: Int, size: String = "320x240", fps: Int = 30, gop: Int = 30, format: String? = nil) throws {
        let source = try TestSource(url: "testsrc://?size=\(size)&fps=\(fps)&gop=\(gop)&frames=\(frames)&realtime=false")
        var options = PublishOptions()
        options.format = format
        let publisher = try Publisher(url: url.path, streams: source.streams, options: options)
        while let p = try source.readPacket() { try publisher.write(p) }
        publisher.finish()
    }

    /// A listening TCP socket that never accepts or answers: the kernel completes connections
    /// into the backlog, and nothing is ever said. Close with `close()`.
    public final class SilentServer: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        private let fd: Int32
        public init() {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = 0
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
            listen(fd, 16)
            // getsockname into a local before `port` is stored.
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
            port = Int(UInt16(bigEndian: addr.sin_port))
        }
        deinit { Glibc.close(fd) }
    }

    /// Resident set size of this process, in KiB.
    public static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }
}
