import ArgumentParser
import Logging
import MediaCore
import Demux
import Wire
import Foundation

/// `--log-format`: lines of text for a terminal, or one JSON object per line for a log
/// collector (journald's JSON export, Loki, Elasticsearch).
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// `--verbose` and `--log-format`, the same for every command that runs for a while.
struct LoggingOptions: ParsableArguments {
    @Flag(help: "Log more, FFmpeg's own messages included.")
    var verbose = false

    @Option(help: "Log lines as text, or as one JSON object per line (json).")
    var logFormat: LogFormat = .text

    func bootstrap() { LoggingSetup.bootstrap(verbose: verbose, format: logFormat) }
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
        // libsrt's errors too: it would print them on stderr in a format of its own.
        SRTLog.route(to: Logger(label: "srt"))
        if verbose {
            FFmpegLog.route(to: Logger(label: "ffmpeg"), level: .info)
        } else {
            FFmpegLog.silence()
        }
    }

    /// Where `serve` says where it listens and what each stream offers, whatever `--verbose`
    /// says: as text, the banner's bare lines on stdout; as JSON, a record each on stderr like
    /// every other line, so that a log collector (or `jq`) reads all the process writes.
    static func banner(format: LogFormat) -> Logger {
        Logger(label: "liverelay") { label in ScrubbingStderrHandler(label: label, format: format, banner: true) }
    }

    /// Says once why the command stops: `liverelay: …` on stderr as text; as JSON, a
    /// `critical` record (after `bootstrap`).
    static func fail(_ message: String, format: LogFormat) {
        switch format {
        case .text: FileHandle.standardError.write(Data(Redactor.scrub("liverelay: \(message)\n").utf8))
        case .json: Logger(label: "liverelay").critical("\(message)")
        }
    }

    /// ArgumentParser's usage error, said before logging could start: as a JSON record when the
    /// arguments ask for `--log-format json`, so that even a mistyped unit file's first line parses.
    static func usageError(_ message: String, arguments: [String]) {
        let json = arguments.contains("--log-format=json") || zip(arguments, arguments.dropFirst()).contains { $0 == "--log-format" && $1 == "json" }
        let line = json ? ScrubbingStderrHandler.jsonLine(level: .critical, label: "liverelay", message: message, metadata: [:]) : message + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// A stderr log handler that passes every line through `Redactor.scrub`: text, or one JSON
/// object per line (`time` in RFC 3339 UTC, `level`, `logger`, `message`, `stream` from
/// `stream.name`, and every other metadata key as it is). One `write` per line, so lines never
/// interleave.
///
/// The banner's handler (`banner`, `LoggingSetup.banner`): as text, the message alone on
/// stdout, where its indentation lays it out under its heading; as JSON, a record on stderr
/// like any other, its message starting at its first word.
struct ScrubbingStderrHandler: LogHandler {
    let label: String
    var format: LogFormat = .text
    var banner = false
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
        case .text where banner:
            FileHandle.standardOutput.write(Data(Redactor.scrub("\(event.message)\n").utf8))
            return
        case .json where banner:
            line = Self.jsonLine(level: event.level, label: label, message: String("\(event.message)".drop { $0 == " " }), metadata: all)
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
