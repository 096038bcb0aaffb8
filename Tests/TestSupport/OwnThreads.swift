public import Testing
import Foundation

/// Runs each test of a suite on threads of its own instead of Swift's cooperative pool.
///
/// The pool has one thread per core (two here). A test that waits by sleeping, for a child
/// process or for a socket holds one of them, and with tests side by side two such waits stop
/// every other test's timers and awaits: measured, the suite side by side took 873 s with tests
/// 5× slower than alone and timers seconds late. Under this trait a test's task prefers
/// `WaitingThreads.shared` (SE-0417), which starts a thread whenever a job would otherwise queue,
/// so a blocked test blocks only itself. Child tasks (`async let`, groups) inherit the preference.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(WaitingThreads.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Each test of the suite runs on threads of its own (see `OwnThreadsTrait`).
    public static var ownThreads: Self { OwnThreadsTrait() }
}

extension Tag {
    /// Measures a rate, a latency or a deadline that other tests' load would distort: the suite
    /// runs these one at a time, after the others have run side by side (scripts/test.sh).
    @Tag public static var exclusive: Self
}

/// A task executor whose threads may block: a job never waits for a busy thread, a new one is
/// started instead, and idle threads wait for the next job. The number of threads is the most
/// jobs ever ready at once (the tests waiting at the same moment, a few dozen).
public final class WaitingThreads: TaskExecutor, @unchecked Sendable {
    // Safety: `jobs`, `idle` and `started` are read and written only under `condition`.
    public static let shared = WaitingThreads()
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var started = 0

    public var threadCount: Int { condition.lock(); defer { condition.unlock() }; return started }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Every queued job has a waiting thread to take it; if not, one more thread.
        let spawn = jobs.count > idle
        if spawn { started += 1 }
        condition.signal()
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in work() }
            thread.name = "test-waiting-\(started)"
            thread.start()
        }
    }

    private func work() {
        condition.lock()
        while true {
            while jobs.isEmpty {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
    }
}
