import Foundation
import Wire
import Glibc
import MediaCore
import Demux
import Synchronization

/// `source: "exec:COMMAND"`: a command that writes the stream's media (MPEG-TS, FLV, Matroska…)
/// to its standard output, as go2rtc's `exec:` and MediaMTX's `runOnDemand` do: run under
/// `/bin/sh -c` in a process group of its own when the stream is opened, read through a pipe by
/// libavformat, and stopped (SIGTERM to the group, SIGKILL 2 s later) when the source closes.
/// With `on_demand` (the default for exec sources) that is: started by the first viewer,
/// stopped when the stream is idle. A command that exits is run again by the reconnect loop.
///
/// Only the configuration file sets one (an API body cannot). Its standard error goes to
/// /dev/null (ffmpeg writes there without end; a pipe nobody reads would stall it).
enum ExecSource {
    static let prefix = "exec:"

    static func isExec(_ url: String) -> Bool { url.utf8.starts(with: prefix.utf8) }

    static func command(of url: String) -> String { String(url.dropFirst(prefix.count)) }

    /// How errors name the source: `exec:` and the command's first word (its arguments may
    /// carry secrets).
    static func label(_ url: String) -> String {
        "exec:" + String(command(of: url).trimmingASCIISpaces().prefix { $0 != " " }.prefix(60))
    }

    static func validate(_ url: String) -> String? {
        command(of: url).trimmingASCIISpaces().isEmpty ? "exec: needs a command (exec:ffmpeg … -f mpegts -)" : nil
    }

    static func open(url: String, options: SourceOptions, interrupt: InterruptHandle) throws(IngestError) -> any PacketSource {
        let process: ExecProcess
        do {
            process = try ExecProcess(command: command(of: url))
        } catch {
            throw IngestError(.unreachable, source: label(url), stage: "starting the command", detail: "\(error)")
        }
        var o = options
        o.listen = false
        o.realtime = false
        do {
            let session = try IngestSession(url: "pipe:\(process.output)", options: o, interruptHandle: interrupt)
            return ExecPacketSource(session, process: process, label: label(url))
        } catch {
            let status = process.stop()
            throw IngestError(error.kind, source: label(url), stage: error.stage,
                              detail: status.map { "the command exited (\($0)) before its media could be read" } ?? error.detail)
        }
    }
}

/// A running command with its standard output on a pipe.
final class ExecProcess: Sendable {
    struct SpawnError: Error, CustomStringConvertible { let description: String }
    let pid: pid_t
    /// The read end of the command's standard output.
    let output: Int32
    private let reaped = Mutex<Int32?>(nil)

    init(command: String) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, fds[1])
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (so a stop reaches what the shell started), and the default
        // signal dispositions (the server ignores SIGPIPE; a command should die of it).
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF))
        let env = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let argv = ["/bin/sh", "-c", command]
        var pid: pid_t = 0
        let result = Self.withCStrings(argv) { a in Self.withCStrings(env) { e in posix_spawn(&pid, "/bin/sh", &actions, &attributes, a, e) } }
        close(fds[1])
        guard result == 0 else {
            close(fds[0])
            throw SpawnError(description: "cannot start /bin/sh: \(String(cString: strerror(result)))")
        }
        self.pid = pid
        output = fds[0]
    }

    /// Stops the command's process group and reaps it; returns how it ended (nil: not known).
    @discardableResult
    func stop() -> String? {
        if let done = reaped.withLock({ $0 }) { return Self.describe(done) }
        kill(-pid, SIGTERM)
        let deadline = Date().addingTimeInterval(2)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return finish(status) }
            usleep(20_000)
        }
        kill(-pid, SIGKILL)
        if waitpid(pid, &status, 0) == pid { return finish(status) }
        return nil
    }

    private func finish(_ status: Int32) -> String {
        reaped.withLock { $0 = status }
        return Self.describe(status)
    }

    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7F
        return signal == 0 ? "exit status \((status >> 8) & 0xFF)" : "signal \(signal)"
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        // Safety: strdup'd copies live until body returns, then are freed.
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return body(pointers)
    }
}

/// The command's media as a source; closing it stops the command.
final class ExecPacketSource: PacketSource {
    private let inner: IngestSession
    private let process: ExecProcess
    private let label: String
    init(_ inner: IngestSession, process: ExecProcess, label: String) { self.inner = inner; self.process = process; self.label = label }
    deinit {
        process.stop()
        close(process.output)
    }
    var streams: [StreamInfo] { inner.streams }
    var formatName: String { inner.formatName }
    /// Errors name the command, not the pipe it writes to.
    func readPacket() throws -> Packet? {
        do {
            return try inner.readPacket()
        } catch let e as IngestError {
            throw IngestError(e.kind, source: label, stage: e.stage, detail: e.detail, underlying: e.underlying)
        }
    }
    var interruptHandle: InterruptHandle { inner.interruptHandle }
}
