import Logging
import MediaCore
import Foundation

enum LoggingSetup {
    /// Logs go to stderr, scrubbed of credentials; FFmpeg's own lines are routed through them.
    /// Without `verbose`, FFmpeg's own lines are silenced: a failure is said once, by our error.
    static func bootstrap(verbose: Bool) {
        LoggingSystem.bootstrap { label in
            var h = ScrubbingStderrHandler(label: label)
            h.logLevel = verbose ? .debug : .warning
            return h
        }
        if verbose {
            FFmpegLog.route(to: Logger(label: "ffmpeg"), level: .info)
        } else {
            FFmpegLog.silence()
        }
    }
}

/// A stderr log handler that passes every line through `Redactor.scrub`.
struct ScrubbingStderrHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level, message = event.message
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = Redactor.scrub("\(level) \(label): \(message)\(meta)\n")
        FileHandle.standardError.write(Data(text.utf8))
    }
}
