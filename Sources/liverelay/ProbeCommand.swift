import ArgumentParser
import Demux
import Decode
import MediaCore
import Relay
import Logging
import Foundation
import Mux
import StampedSource

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Open a source, decode frames and report streams, decoder path and latency."
    )

    @Argument(help: "Source URL: rtsp://, rtmp://, srt://, udp://, a file, or testsrc://?size=640x360&fps=30")
    var url: String

    @Option(help: "RTSP transport: udp, tcp or auto (UDP, then TCP).")
    var transport: SourceOptions.Transport = .auto

    @Option(help: "Hardware decoding: auto, vaapi or none.")
    var hwaccel: HardwareAcceleration = .auto

    @Option(help: "DRM render node for VAAPI (default: the first /dev/dri/renderD*).")
    var device: String?

    @Option(help: "Frames to decode.")
    var frames: Int = 100

    @Option(help: "Deadline in seconds for opening and for each read.")
    var timeout: Double = 5

    @Flag(help: "Listen for a publisher (RTMP push, RTSP ANNOUNCE/RECORD, SRT caller) instead of pulling.")
    var listen = false

    @Flag(help: "Pace a file at its frame rate, as a live camera.")
    var realtime = false

    @Option(name: .customLong("option"), help: "Extra libavformat option KEY=VALUE (repeatable).")
    var extraOptions: [String] = []

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard frames > 0 else { throw ValidationError("--frames must be at least 1") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0") }
        for o in extraOptions where !o.contains("=") || o.hasPrefix("=") { throw ValidationError("--option expects KEY=VALUE, got \"\(o)\"") }
    }

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        logging.bootstrap()
        var options = SourceOptions()
        options.transport = transport
        options.openTimeout = timeout
        options.readTimeout = timeout
        options.listen = listen
        options.listenTimeout = listen ? timeout : 0
        options.realtime = realtime
        for o in extraOptions {
            let kv = o.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let key = kv.first, !key.isEmpty else { continue }
            options.extraOptions[key] = kv.count > 1 ? kv[1] : ""
        }
        var decoder = DecoderOptions()
        decoder.hardware = hwaccel
        decoder.devicePath = device
        let prober = Prober(url: url, sourceOptions: options, decoderOptions: decoder, frames: frames, sources: .liverelay, captureAge: StampedSource.captureAge)
        if listen {
            FileHandle.standardError.write(Data("liverelay: waiting for a publisher at \(Redactor.redact(url))\n".utf8))
        }
        let report: ProbeReport
        do {
            report = try prober.run()
        } catch {
            FileHandle.standardError.write(Data(("liverelay: " + Redactor.scrub("\(error)") + "\n").utf8))
            throw ExitCode(1)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(report)) ?? Data("{}".utf8)
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(ProbeCommand.text(report))
        }
        if report.framesDecoded == 0 {
            FileHandle.standardError.write(Data("liverelay: \(report.source): no frame could be decoded\n".utf8))
            throw ExitCode(1)
        }
    }

    static func text(_ r: ProbeReport) -> String {
        func ms(_ v: Double?) -> String { v.map { String(format: "%.1f ms", $0) } ?? "-" }
        var lines: [String] = []
        lines.append("source:        \(r.source)")
        lines.append("container:     \(r.container)" + (r.transport.map { " (transport \($0))" } ?? ""))
        for s in r.streams {
            var d = "  #\(s.index) \(s.mediaType) \(s.codec)"
            if let w = s.width, let h = s.height { d += " \(w)x\(h)" }
            if let f = s.frameRate { d += String(format: " %.2f fps", f) }
            if let sr = s.sampleRate { d += " \(sr) Hz" }
            if let c = s.channels { d += " \(c) ch" }
            d += " tb \(s.timeBase)"
            lines.append(d)
        }
        lines.append("decoder:       \(r.decoderPath)" + (r.fallbackReason.map { " (fallback: \($0))" } ?? ""))
        if let e = r.encoder {
            lines.append("encoder:       \(e.path) (\(e.encoder))" + (e.fallbackReason.map { $0.isEmpty ? "" : " (fallback: \($0))" } ?? "") + ", for renditions")
        }
        lines.append("frames:        \(r.framesDecoded)/\(r.framesRequested) decoded, \(r.corruptPackets) corrupt packets, \(r.corruptFrames) corrupt frames")
        lines.append(String(format: "decode speed:  %.0f frames/s", r.decodeFps))
        lines.append("open:          \(ms(r.openMs)); first frame after \(ms(r.timeToFirstFrameMs))")
        if r.stampsRead > 0 {
            lines.append("latency:       p50 \(ms(r.latencyP50Ms)), p99 \(ms(r.latencyP99Ms)), max \(ms(r.latencyMaxMs)) (capture → decoded, \(r.stampsRead) stamps)")
        }
        if !r.unusedOptions.isEmpty { lines.append("unused options: \(r.unusedOptions.joined(separator: ", "))") }
        return lines.joined(separator: "\n")
    }
}
