import ArgumentParser
import Logging
import MediaCore
import Wire
import Foundation

/// `--log-format`: lines of text for a terminal, or one JSON object per line for a log
/// collector (journald's JSON export, Loki, Elasticsearch).
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

enum LoggingSetup {
    /// Logs go to stderr, scrubbed of credentials; FFmpeg's own lines are routed through them.
    /// Without `verbose`, FFmpeg's own lines are silenced: a failure is said once, by our error.
    static func bootstrap(verbose: Bool, format: LogFormat = .text) {
        LoggingSystem.bootstrap { label in
            var h = ScrubbingStderrHandler(label: label, format: format)
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

/// A stderr log handler that passes every line through `Redactor.scrub`: text, or one JSON
/// object per line (`time` in RFC 3339 UTC, `level`, `logger`, `message`, `stream` from
/// `stream.name`, and every other metadata key as it is). One `write` per line, so lines never
/// interleave.
struct ScrubbingStderrHandler: LogHandler {
    let label: String
    var format: LogFormat = .text
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let line: String
        switch format {
        case .text:
            let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = Redactor.scrub("\(event.level) \(label): \(event.message)\(meta)\n")
        case .json:
            line = Self.jsonLine(level: event.level, label: label, message: "\(event.message)", metadata: all)
        }
        FileHandle.standardError.write(Data(line.utf8))
    }

    static func jsonLine(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, now: Date = Date()) -> String {
        var fields: [(String, String)] = [("time", now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
                                          ("level", level.rawValue), ("logger", label), ("message", message)]
        let reserved: Set<String> = ["time", "level", "logger", "message"]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = key == "stream.name" ? "stream" : key
            fields.append((reserved.contains(name) ? "meta.\(name)" : name, "\(value)"))
        }
        var out = "{"
        for (i, (k, v)) in fields.enumerated() {
            if i > 0 { out += "," }
            out += JSONText.quoted(k) + ":" + JSONText.quoted(Redactor.scrub(v))
        }
        return out + "}\n"
    }
}
