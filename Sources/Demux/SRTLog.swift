import CSRT
public import Logging
import MediaCore
import Synchronization
import Glibc

/// Routes libsrt's own log lines into swift-log, scrubbed of credentials. libsrt otherwise
/// prints to stderr on its own threads, outside any log format (`--log-format json`).
public enum SRTLog {
    private static let target = Mutex<Logger?>(nil)
    /// Threads whose libsrt calls' failures their caller handles and says itself (a count per
    /// thread, so calls may nest).
    private static let quietThreads = Mutex<[UInt: Int]>([:])

    /// Runs `body` with libsrt's errors on this thread left out of the log: for a call such as
    /// a blocking `srt_accept`, whose failure when its listener closes is the expected way out.
    static func quietly<T>(_ body: () -> T) -> T {
        let me = UInt(pthread_self())
        quietThreads.withLock { $0[me, default: 0] += 1 }
        defer {
            quietThreads.withLock { q in
                let left = q[me, default: 1] - 1
                q[me] = left > 0 ? left : nil
            }
        }
        return body()
    }

    /// A line of LiveRelay's own about libsrt (where no other logger reaches).
    static func error(_ text: String) {
        target.withLock { $0 }?.error("srt: \(Redactor.scrub(text))")
    }

    /// Sends libsrt's errors to `logger` (its warnings, such as "nothing to read" on each
    /// receive deadline, say nothing LiveRelay does not know). Call once at start-up.
    public static func route(to logger: Logger) {
        target.withLock { $0 = logger }
        srt_setloglevel(3 /* LOG_ERR */)
        // The line alone: the logger adds the time and the level.
        srt_setlogflags(Int32(SRT_LOGF_DISABLE_TIME | SRT_LOGF_DISABLE_THREADNAME | SRT_LOGF_DISABLE_SEVERITY | SRT_LOGF_DISABLE_EOL))
        srt_setloghandler(nil) { _, _, _, _, _, message in
            guard let message else { return }
            let text = String(cString: message)
            guard !text.isEmpty, SRTLog.quietThreads.withLock({ $0[UInt(pthread_self())] == nil }),
                  let logger = SRTLog.target.withLock({ $0 }) else { return }
            logger.error("srt: \(Redactor.scrub(text))")
        }
    }
}
