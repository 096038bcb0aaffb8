@_exported public import Bench
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the package lives, for scripts and the built binary.
public enum Paths {
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// The directory holding the test bundle and the products built with it.
    public static let productsDirectory: URL = {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // swift-testing on Linux runs the .xctest binary itself.
        while dir.pathExtension == "xctest" || dir.lastPathComponent == "MacOS" || dir.lastPathComponent == "Contents" {
            dir.deleteLastPathComponent()
        }
        return dir
    }()

    public static var liverelay: String { productsDirectory.appendingPathComponent("liverelay").path }
    public static var fuzzReplay: String { productsDirectory.appendingPathComponent("liverelay-fuzz").path }

    public static func tempDirectory(_ name: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("liverelay-\(name)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The fast run (`scripts/test.sh --fast`, which sets LIVERELAY_TEST_FAST=1) starts no process
/// and no server: the helpers here that would start one throw instead, naming it, so a test
/// tagged `.fast` by mistake fails at the line that wanted it. (The script also watches every
/// exec of the run, so a test starting a process on its own fails the run too.)
public enum FastRun {
    public static let isOn = ProcessInfo.processInfo.environment["LIVERELAY_TEST_FAST"] == "1"

    /// Throws in the fast run: `what` is what the caller was about to start.
    public static func refuse(_ what: String) throws {
        guard isOn else { return }
        throw Servers.ServerError("this test starts \(what), and the fast run starts no process: it is not a `.fast` test")
    }
}

/// Free loopback ports: bind port 0, read what the kernel gave, close.
public enum FreePort {
    public static func tcp() -> Int { allocate(type: Int32(SOCK_STREAM.rawValue)) }
    public static func udp() -> Int { allocate(type: Int32(SOCK_DGRAM.rawValue)) }

    private static func allocate(type: Int32) -> Int {
        let (fd, port) = boundLoopbackSocket(type: type)
        close(fd)
        return port
    }

    /// A socket bound to 127.0.0.1 on a port the kernel picks; the caller closes it.
    public static func boundLoopbackSocket(type: Int32) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, type, 0)
        precondition(fd >= 0, "socket() failed")
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// True once something accepts TCP connections on the port.
    public static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }

    public static func waitUntilListening(_ port: Int, timeout: Double = 10) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if isListening(port) { return true }
            usleep(50_000)
        }
        return false
    }
}

/// The result of running a command to completion.
