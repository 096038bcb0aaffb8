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
        av_log_set_level(avLevel(level))
        lr_install_log_sink { level, line in
            guard let line else { return }
            let text = String(cString: line).trimmingTrailingNewlines()
            guard !text.isEmpty else { return }
            FFmpegLog.emit(level: level, text: Redactor.scrub(text))
        }
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
