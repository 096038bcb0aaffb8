public import Foundation
public import Relay
public import MediaCore
import Demux
import Mux
import StampedSource

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
    /// into the backlog, and nothing is ever said. Closed when released.
    public final class SilentServer: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        private let fd: Int32
        public init() {
            (fd, port) = FreePort.boundLoopbackSocket(type: Int32(SOCK_STREAM.rawValue))
            listen(fd, 16)
        }
        deinit { Glibc.close(fd) }
    }

    /// Resident set size of this process, in KiB. Other tests side by side move it: a test that
    /// measures it is `.exclusive`.
    public static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }
}

/// The sources tests open: libavformat's and the stamped `testsrc://`, as the program has them.
public enum TestSources {
    public static var opener: SourceOpener {
        var o = SourceOpener()
        o.register(scheme: StampedSource.scheme, open: StampedSource.open, validate: StampedSource.validate)
        return o
    }
}

extension TestMedia {
    /// Every packet of `frames` frames of the stamped source (1 s GOPs at 30 fps), in memory.
    public static func packets(_ frames: Int, size: String = "160x96") throws -> (packets: [Packet], streams: [StreamInfo]) {
        let source = try TestSource(url: "testsrc://?size=\(size)&fps=30&gop=30&frames=\(frames)&realtime=false")
        var out: [Packet] = []
        while let p = try source.readPacket() { out.append(p) }
        return (out, source.streams)
    }
}
