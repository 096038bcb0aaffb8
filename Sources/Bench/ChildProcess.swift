public import Foundation
import RelayAPI
import Relay

/// What a finished command printed and returned.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var seconds: Double
    public var timedOut: Bool
    public var output: String { stdout + stderr }
}

/// A bench or test failure with one line to say.
public struct BenchError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A child process the bench or a test owns (a peer server, a reader, a player): its output
/// collected, its CPU and memory readable from /proc, terminated on `stop()` or when released.
/// The one process wrapper of the project.
public final class ChildProcess: @unchecked Sendable {
    // Safety: `process` and the pipes are set in init and only read afterwards; Process is
    // thread-safe for terminate/isRunning; the buffers lock.
    public let process = Process()
    public let name: String
    private let outPipe = Pipe()
    private let errPipe = Pipe()
    private let outBuffer = LockedData()
    private let errBuffer = LockedData()
    /// Left by each output's collecting thread at the pipe's end.
    private let collecting = DispatchGroup()
    /// Standard output left unread for the owner (`rawStdout: true`): a stream of pictures.
    public let rawStdout: Pipe?

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, name: String? = nil, rawStdout: Bool = false) throws {
        self.name = name ?? URL(fileURLWithPath: executable).lastPathComponent
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardInput = FileHandle.nullDevice
        process.standardError = errPipe
        self.rawStdout = rawStdout ? outPipe : nil
        process.standardOutput = outPipe
        try process.run()
        if !rawStdout { Self.drain(outPipe, into: outBuffer, group: collecting) }
        Self.drain(errPipe, into: errBuffer, group: collecting)
    }

    /// Collects a pipe's output on a thread of its own, reading a duplicate of its descriptor
    /// until the end. Not Foundation's `readabilityHandler`: its dispatch source, cancelled while
    /// the pipe's descriptor is closed and reused, crashed the test runner in libdispatch's
    /// `_dispatch_event_loop_drain` (a soak starts and drops a hundred children).
    private static func drain(_ pipe: Pipe, into buffer: LockedData, group: DispatchGroup) {
        let fd = dup(pipe.fileHandleForReading.fileDescriptor)
        guard fd >= 0 else { return }
        group.enter()
        let t = Thread {
            defer { group.leave() }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    buffer.append(Data(chunk[0..<n]))
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(fd)
        }
        t.name = "child-output"
        t.stackSize = 256 * 1024
        t.start()
    }

    /// A named child (the bench's tables and errors say which).
    public convenience init(name: String, _ executable: String, _ arguments: [String], rawStdout: Bool = false) throws {
        try self.init(executable, arguments, name: name, rawStdout: rawStdout)
    }

    deinit { stop() }

    public var stdout: String { outBuffer.string }
    public var stderr: String { errBuffer.string }

    /// Waits until everything the process wrote has been collected (its pipes ended), at most
    /// `timeout` seconds (a child it left running may hold them open).
    @discardableResult
    public func waitForOutput(timeout: Double) -> Bool {
        collecting.wait(timeout: .now() + timeout) == .success
    }

    /// Waits until a line containing `text` appears on stdout or stderr.
    public func waitFor(_ text: String, timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if stdout.contains(text) || stderr.contains(text) { return true }
            if !process.isRunning { return stdout.contains(text) || stderr.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// Waits for a line containing `marker` (a banner such as "RTSP server listening on") and
    /// returns the port of the first URL after it (`scheme://host:PORT`); nil if no such line
    /// came within `timeout`. Servers started on port 0 say here which port the kernel gave them.
    public func listeningPort(_ marker: String, timeout: Double) -> Int? {
        let end = Date().addingTimeInterval(timeout)
        while true {
            for line in (stdout + "\n" + stderr).split(separator: "\n") {
                if let port = Self.port(in: line, after: marker) { return port }
            }
            if !process.isRunning || Date() >= end { return nil }
            usleep(20_000)
        }
    }

    /// The port of the first `scheme://host:PORT` after `marker` in `line`; an IPv6 host is in
    /// brackets.
    static func port(in line: Substring, after marker: String) -> Int? {
        guard let m = line.range(of: marker), let scheme = line[m.upperBound...].range(of: "://") else { return nil }
        var rest = line[scheme.upperBound...]
        if rest.first == "[", let close = rest.firstIndex(of: "]") { rest = rest[rest.index(after: close)...] }
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let digits = rest[rest.index(after: colon)...].prefix { $0.isASCII && $0.isNumber }
        guard let port = Int(digits), (1...65535).contains(port) else { return nil }
        return port
    }

    /// Waits for exit; terminates the process if it runs past `timeout`.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < end { usleep(20_000) }
        if process.isRunning { stop(); return false }
        return true
    }

    /// SIGTERM, then SIGKILL after two seconds.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let end = Date().addingTimeInterval(2)
        while process.isRunning && Date() < end { usleep(10_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Kills the process at once (SIGKILL: a camera losing power), and reaps it.
    public func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    /// CPU seconds used so far, from /proc: the scheduler's nanosecond run time of each live
    /// thread (the tick-based user + system times of /proc/PID/stat are 10 ms grains, as much
    /// as a quiet stream uses in a second), else the tick-based figure.
    public var cpuSeconds: Double {
        let pid = process.processIdentifier
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty {
            var ns = 0.0
            for t in tasks {
                guard let line = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
                      let first = line.split(separator: " ").first, let v = Double(first) else { continue }
                ns += v
            }
            if ns > 0 { return ns / 1e9 }
        }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident memory in MiB, from /proc.
    public var rssMiB: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }

    /// Runs a command to completion within `timeout` seconds.
    public static func run(_ executable: String, _ arguments: [String], timeout: Double = 900) throws -> CommandResult {
        // Output goes to files, read once the command has ended: every byte, with no pipe
        // handler to race (a fixed pause lost the end of outputs over 8 KiB on a busy machine;
        // waiting for a pipe's end hangs when a grandchild keeps it open).
        let start = Date()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("lr-run-\(getpid())-\(UUID().uuidString)")
        let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outURL); try? FileManager.default.removeItem(at: errURL) }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(2_000) }
        let timedOut = p.isRunning
        if timedOut {
            p.terminate()
            usleep(500_000)
            if p.isRunning { Glibc.kill(p.processIdentifier, SIGKILL) }
        }
        p.waitUntilExit()
        try? out.close()
        try? err.close()
        let stdout = String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self)
        let stderr = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
        return CommandResult(status: p.terminationStatus, stdout: stdout, stderr: stderr,
                             seconds: Date().timeIntervalSince(start), timedOut: timedOut)
    }

}

final class LockedData: @unchecked Sendable {
    // Safety: every access goes through `lock`.
    private let lock = NSLock()
    private var data = Data()
    func append(_ d: Data) { lock.lock(); data.append(d); lock.unlock() }
    var string: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }
}

extension ChildProcess {
    /// The answer of `url` (curl with `extra` arguments: headers, credentials; `maxTime`
    /// seconds) as a `T`, read with RelayAPI's decoder; nil when nothing answers or the answer
    /// is not a `T` (a refusal's `APIError`, say).
    /// The body of a 200 answer to a GET of `url` (the bench's own servers), else nil. Through
    /// BoundedHTTP (AsyncHTTPClient): Foundation's `Data(contentsOf:)` needs FoundationNetworking
    /// for http URLs, which the binary does not link.
    public static func httpBody(_ url: String, timeout: Double = 3) -> Data? {
        guard case .success(let a) = BoundedHTTP.sendWaiting(method: "GET", url: url, timeout: timeout, maxBody: 64 << 20), a.status == 200 else { return nil }
        return Data(a.body)
    }

    public static func decode<T: Decodable>(_ type: T.Type, from url: String, curl extra: [String] = [], maxTime: Int = 3) -> T? {
        guard let r = try? ChildProcess.run("/usr/bin/curl", ["-s", "-m", "\(maxTime)"] + extra + [url], timeout: Double(maxTime) + 2), r.status == 0 else { return nil }
        return try? RelayAPI.decoder.decode(type, from: Data(r.stdout.utf8))
    }

    /// `liverelay serve` (the executable `me`) with `yaml` written to `file`, on a loopback port
    /// the kernel picks; returns once its output says `ready`, or throws with what it said (and stops it).
    static func serve(me: String, yaml: String, file: URL, ready: String = "listening on", timeout: Double = 30) throws -> (serve: ChildProcess, port: Int) {
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let serve = try ChildProcess(name: "serve", me, ["serve", "--config", file.path, "--listen", "127.0.0.1:0", "--state-dir", file.deletingLastPathComponent().path])
        guard let port = serve.listeningPort("LiveRelay listening on", timeout: timeout), serve.waitFor(ready, timeout: timeout) else {
            serve.stop()
            throw BenchError("serve did not start: \(serve.stderr.suffix(300))")
        }
        return (serve, port)
    }
}
