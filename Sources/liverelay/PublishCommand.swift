import ArgumentParser
import Demux
import MediaCore
import Mux
import Relay
import Foundation

struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a source (default: the stamped test source) to rtmp://, rtsp://, srt://, udp:// or a file, without re-encoding."
    )

    @Argument(help: "Destination URL or file.")
    var destination: String

    @Option(help: "Source to publish.")
    var source: String = "testsrc://?size=640x360&fps=30&gop=30"

    @Option(help: "RTSP publish transport: udp or tcp.")
    var transport: SourceOptions.Transport = .tcp

    @Option(help: "Stop after this many seconds (0: run until interrupted or the source ends).")
    var duration: Double = 0

    @Option(help: "Deadline in seconds for connecting and for each write.")
    var timeout: Double = 5

    @Option(help: "Container override (flv, mpegts, rtsp, mp4, matroska …).")
    var format: String?

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        logging.bootstrap()
        let handle = InterruptHandle()
        Signals.onTerminate { handle.interrupt() }
        do {
            var sourceOptions = SourceOptions()
            sourceOptions.realtime = true
            let input = try SourceOpener.liverelay.open(url: source, options: sourceOptions, interruptHandle: handle)
            var options = PublishOptions()
            options.transport = transport
            options.connectTimeout = timeout
            options.writeTimeout = timeout
            options.format = format
            let publisher = try Publisher(url: destination, streams: input.streams, options: options)
            let end = duration > 0 ? MonotonicClock.nanoseconds() + UInt64(duration * 1e9) : UInt64.max
            while MonotonicClock.nanoseconds() < end, !handle.isInterrupted {
                guard let packet = try input.readPacket() else { break }
                try publisher.write(packet)
            }
            publisher.finish()
        } catch let e as IngestError where e.kind == .stopped {
            return
        } catch {
            FileHandle.standardError.write(Data(("liverelay: " + Redactor.scrub("\(error)") + "\n").utf8))
            throw ExitCode(1)
        }
    }
}
