import Foundation
import Logging
import Synchronization
import Glibc

/// The command hooks: each matching event runs its command under `/bin/sh -c` with the event in
/// `LIVERELAY_*` environment variables, at most `max_commands` at once (the rest wait, up to
/// 256, then are dropped, counted), each stopped after its timeout (SIGTERM, then SIGKILL).
final class CommandHooks: Sendable {
    struct Counters: Sendable {
        var succeeded = 0
        var failed = 0
        var timedOut = 0
        var dropped = 0
        var lastError: String?
    }
    private struct Waiting: Sendable {
        let index: Int
        let environment: [String: String]
    }
    private struct State {
        var running = 0
        var waiting: [Waiting] = []
        var counters: [Counters]
        var stopped = false
    }
    static let waitingLimit = 256

    let commands: [HookSettings.Command]
    private let maxRunning: Int
    private let state: Mutex<State>
    private let logger: Logger

    init(commands: [HookSettings.Command], maxRunning: Int, logger: Logger) {
        self.commands = commands
        self.maxRunning = max(1, maxRunning)
        self.logger = logger
        state = Mutex(State(counters: Array(repeating: Counters(), count: commands.count)))
    }

    func counters(_ index: Int) -> Counters { state.withLock { $0.counters.indices.contains(index) ? $0.counters[index] : Counters() } }

    func enqueue(_ event: StreamEvent, id: String) {
        let base = ProcessInfo.processInfo.environment
        for (i, c) in commands.enumerated() where c.events?.contains(event.kind) ?? true {
            let env = base.merging(event.hookEnvironment(id: id)) { $1 }
            let start = state.withLock { s -> Bool in
                if s.stopped { return false }
                if s.running < maxRunning { s.running += 1; return true }
                if s.waiting.count < Self.waitingLimit { s.waiting.append(Waiting(index: i, environment: env)) } else { s.counters[i].dropped += 1 }
                return false
            }
            if start { launch(Waiting(index: i, environment: env)) }
        }
    }

    /// Runs no more; those running finish or time out.
    func stop() { state.withLock { $0.stopped = true; $0.waiting.removeAll() } }

    private func launch(_ job: Waiting) {
        let command = commands[job.index]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command.run]
        process.environment = job.environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let timedOut = Atomic<Bool>(false)
        process.terminationHandler = { [self] p in
            let status = p.terminationStatus
            let late = timedOut.load(ordering: .relaxed)
            finished(job.index, outcome: late ? .timedOut : status == 0 ? .succeeded : .failed("exit status \(status)"))
        }
        do {
            try process.run()
        } catch {
            finished(job.index, outcome: .failed("cannot start /bin/sh: \(error)"))
            return
        }
        let pid = process.processIdentifier
        let limit = command.timeout
        Task.detached {
            try? await Task.sleep(for: .seconds(limit))
            guard process.isRunning else { return }
            timedOut.store(true, ordering: .relaxed)
            kill(pid, SIGTERM)
            try? await Task.sleep(for: .seconds(2))
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }

    private enum Outcome { case succeeded, failed(String), timedOut }

    private func finished(_ index: Int, outcome: Outcome) {
        let next = state.withLock { s -> Waiting? in
            switch outcome {
            case .succeeded: s.counters[index].succeeded += 1
            case .failed(let why): s.counters[index].failed += 1; s.counters[index].lastError = why
            case .timedOut: s.counters[index].timedOut += 1; s.counters[index].lastError = "timed out after \(commands[index].timeout) s"
            }
            if !s.stopped, !s.waiting.isEmpty { return s.waiting.removeFirst() }
            s.running -= 1
            return nil
        }
        switch outcome {
        case .succeeded: break
        case .failed(let why): logger.warning("hook: a command failed", metadata: ["hook": "command\(index)", "error": "\(why)"])
        case .timedOut: logger.warning("hook: a command timed out and was stopped", metadata: ["hook": "command\(index)", "timeout": "\(commands[index].timeout)"])
        }
        if let next { launch(next) }
    }
}
