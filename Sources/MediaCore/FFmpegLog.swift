internal import CFFmpeg
public import Logging
import Synchronization

/// Routes FFmpeg's own log lines (`av_log`) into swift-log, with credentials scrubbed.
public enum FFmpegLog {
    private static let target = Mutex<Logger?>(nil)

    /// Sends FFmpeg's messages at `level` and above to `logger`. FFmpeg's default is to print
    /// to stderr unfiltered, which could show a URL's password; call this once at start-up.
    public static func route(to logger: Logger, level: Logger.Level = .warning) {
        target.withLock { $0 = logger }
        installed.withLock { $0 = true }
        av_log_set_level(avLevel(level))
        lr_install_log_sink { level, line in
            guard let line else { return }
            let text = String(cString: line).trimmingTrailingNewlines()
            guard !text.isEmpty else { return }
            FFmpegLog.emit(level: level, text: Redactor.scrub(text))
        }
    }

    private static let installed = Mutex(false)

    /// Puts LiveRelay's callback in place (printing like FFmpeg's own until `route` is called),
    /// so that the signs of damage below are counted. Idempotent.
    static func ensureCallback() {
        installed.withLock { done in
            if !done { lr_install_log_sink(nil); done = true }
        }
    }

    /// RTP packets that FFmpeg's RTP demuxer reported lost or too late on this thread since
    /// the last call (it says so only in its log). Call on the thread that reads the source.
    package static func takeRTPLosses() -> Int {
        ensureCallback()
        return lr_take_rtp_losses()
    }

    /// Counts the errors one codec context logs (a decoder that met damaged data says so in
    /// its log, from any of its slice threads, and rarely flags the picture).
    package final class ErrorWatch: @unchecked Sendable {
        private let slot: Int32

        /// `context` is the codec context's address; unwatched when this is released, which
        /// must happen before the context is freed.
        package init(context: UnsafeMutableRawPointer) {
            FFmpegLog.ensureCallback()
            slot = lr_watch(context)
        }

        deinit { lr_unwatch(slot) }

        /// Errors logged since the last call.
        package func take() -> Int { lr_take_watched_errors(slot) }
    }

    /// Silences FFmpeg's log entirely (tests that expect failures).
    public static func silence() {
        av_log_set_level(AV_LOG_QUIET)
    }

    private static func emit(level: Int32, text: String) {
        guard let logger = target.withLock({ $0 }) else { return }
        let l: Logger.Level = switch level {
        case ...AV_LOG_ERROR: .error
        case ...AV_LOG_WARNING: .warning
        case ...AV_LOG_INFO: .info
        case ...AV_LOG_VERBOSE: .debug
        default: .trace
        }
        logger.log(level: l, "\(text)", metadata: ["source": "ffmpeg"])
    }

    private static func avLevel(_ level: Logger.Level) -> Int32 {
        switch level {
        case .trace: AV_LOG_TRACE
        case .debug: AV_LOG_VERBOSE
        case .info: AV_LOG_INFO
        case .notice, .warning: AV_LOG_WARNING
        case .error, .critical: AV_LOG_ERROR
        }
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
