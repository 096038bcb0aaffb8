import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// Streams read over SRT on the one SRT port (`streamid=read:NAME`, `#!::r=NAME,m=request`), by
/// three independent readers: ffmpeg (its stamped pictures read back), GStreamer's srtsrc and
/// srt-live-transmit. Each reader is an output of its stream, listed by the API; an unknown
/// stream is refused in the handshake and counted.
@Suite(.ownThreads, .serialized) struct SRTReadTests {
    static func start(_ yaml: String) throws -> (serve: ChildProcess, http: Int, srt: Int, dir: URL) {
        let (serve, port, dir, srt) = try Servers.serve(yaml, listener: "SRT ingest")
        return (serve, port, srt, dir)
    }

    /// MPEG-TS a command wrote, read back by `liverelay probe`: its stamps and picture size.
    static func probeFile(_ path: String) throws -> RTSPServeTests.Probed {
        let r = try ChildProcess.run(Paths.liverelay, ["probe", path, "--frames", "60", "--json"], timeout: 30)
        return RTSPServeTests.Probed(report: try? Servers.decode(ProbeReport.self, r.stdout), said: r.stderr)
    }

    /// ffmpeg reading `url` for `seconds` into `file` (copied, not decoded); its exit status and stderr.
    static func ffmpegRead(_ url: String, to file: URL, seconds: Int = 4) throws -> CommandResult {
        try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error", "-probesize", "200000", "-analyzeduration", "500000",
                                                  "-i", url, "-t", String(seconds), "-c", "copy", "-f", "mpegts", file.path], timeout: 30)
    }

    @Test func ffmpegGStreamerAndSrtLiveTransmitReadAStream() throws {
        let (serve, port, srt, dir) = try Self.start("""
        ingest:
          srt: {listen: "127.0.0.1:0"}
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30", preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "srt://127.0.0.1:\(srt)?connect_timeout=3000"

        // While ffmpeg reads, the reader is an output of its stream (kind srt), delivering.
        let ffmpegFile = dir.appendingPathComponent("ffmpeg.ts")
        let reader = try ChildProcess("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error", "-probesize", "200000", "-analyzeduration", "500000",
                                                           "-i", "\(base)&streamid=read:cam", "-t", "4", "-c", "copy", "-f", "mpegts", ffmpegFile.path])
        var sinks: [OutputStatus] = []
        let listedBy = Date().addingTimeInterval(10)
        repeat {
            usleep(250_000)
            sinks = (try? Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam"))?.sinks ?? []
        } while Date() < listedBy && !sinks.contains(where: { $0.kind == .srt && $0.counters.delivered > 30 })
        #expect(sinks.contains { $0.kind == .srt && $0.state == .running && $0.counters.delivered > 30 }, "\(sinks)")
        #expect(reader.wait(timeout: 25), "\(reader.stderr.suffix(400))")
        let p = try Self.probeFile(ffmpegFile.path)
        #expect(p.report?.stampsRead == 60 && p.report?.codec == "h264" && p.report?.width == 640 && p.report?.corruptFrames == 0, "ffmpeg: \(p)")

        // Then three readers at once, all served by the stream's one readers' thread: one that
        // stops reading (its output piped into a sleeping process) never holds back the other two.
        let stalled = try ChildProcess("/bin/sh", ["-c", "timeout -s INT -k 1 7 srt-live-transmit -q -a:no 'srt://127.0.0.1:\(srt)?streamid=read:cam' file://con | sleep 9"])
        defer { stalled.stop() }
        usleep(1_000_000)
        // GStreamer's srtsrc, with SRT's own stream ID syntax (`#` written %23 in a URI).
        let gstFile = dir.appendingPathComponent("gst.ts")
        let g = try ChildProcess("/usr/bin/timeout", ["-s", "INT", "-k", "3", "5", "/usr/bin/gst-launch-1.0", "-e", "srtsrc",
                                                      "uri=srt://127.0.0.1:\(srt)?streamid=%23!::r=cam,m=request", "auto-reconnect=false",
                                                      "!", "filesink", "location=\(gstFile.path)"])
        // srt-live-transmit (libsrt's own tool, no FFmpeg), MediaMTX's syntax.
        let sltFile = dir.appendingPathComponent("slt.ts")
        let slt = try ChildProcess("/bin/sh", ["-c", "timeout -s INT -k 2 4 srt-live-transmit -q -a:no 'srt://127.0.0.1:\(srt)?streamid=read:cam' file://con > \(sltFile.path)"])
        _ = g.wait(timeout: 20)
        _ = slt.wait(timeout: 20)
        let gp = try Self.probeFile(gstFile.path)
        #expect(gp.report?.stampsRead == 60 && gp.report?.width == 640, "GStreamer: \(gp); \((g.stdout + g.stderr).suffix(400))")
        let sp = try Self.probeFile(sltFile.path)
        #expect(sp.report?.stampsRead == 60 && sp.report?.width == 640, "srt-live-transmit: \(sp); \(slt.stderr.suffix(400))")
        stalled.stop()

        // Every reader's output left with it.
        var after: [OutputStatus] = []
        let gone = Date().addingTimeInterval(10)
        repeat {
            usleep(500_000)
            after = (try? Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam"))?.sinks ?? []
        } while Date() < gone && after.contains { $0.kind == .srt }
        #expect(!after.contains { $0.kind == .srt }, "a reader left but its output stayed: \(after)")

        // An unknown stream is refused in the handshake, counted as a reader's refusal.
        let unknown = try Self.ffmpegRead("\(base)&streamid=read:nosuch", to: dir.appendingPathComponent("none.ts"), seconds: 1)
        #expect(unknown.status != 0)
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"], timeout: 10).stdout
        #expect(metrics.contains("liverelay_ingest_refused_total{protocol=\"srt\",reason=\"read_unknown_stream\"} 1"), "\(metrics.split(separator: "\n").filter { $0.contains("refused") })")

        // Stopping closes the port, which ends the accepting thread's wait in `srt_accept`:
        // serve exits by itself (not killed after 2 s), and without libsrt's "listener socket is
        // already closed" error in the log.
        serve.stop()
        serve.waitForOutput(timeout: 5)
        #expect(serve.exitStatus == 0, "exit \(String(describing: serve.exitStatus))")
        #expect(!serve.stderr.contains("srt_accept") && !serve.stdout.contains("srt_accept"), "\(serve.stderr.suffix(1500))")
    }

    /// With `auth`: a user with the read permission names themselves in the stream ID; a stream
    /// with `srt_read_passphrase` also lets in whoever has its passphrase; no one else reads, and
    /// every wrong password counts toward the failure limit. Nothing secret reaches the log.
    @Test func readingNeedsCredentialsOrTheStreamsReadPassphrase() throws {
        let h = try ["viewer": "viewer-secret-88", "pub": "pub-secret-77"].mapValues { try AccessTests.hash($0) }
        let phrase = "read-phrase-2026"
        let (serve, port, srt, dir) = try Self.start("""
        auth:
          users:
            - {name: viewer, password: "\(h["viewer"]!)", permissions: [read, metrics]}
            - {name: pub, password: "\(h["pub"]!)", permissions: [publish]}
        ingest:
          srt: {listen: "127.0.0.1:0"}
        streams:
          cam: {source: "testsrc://?size=320x180&fps=30&gop=30", preview: false}
          ops: {source: "testsrc://?size=320x180&fps=30&gop=30", preview: false, srt_read_passphrase: "\(phrase)"}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "srt://127.0.0.1:\(srt)?connect_timeout=3000"
        func reads(_ query: String) throws -> Bool {
            let file = dir.appendingPathComponent("r.ts")
            try? FileManager.default.removeItem(at: file)
            let r = try Self.ffmpegRead("\(base)&\(query)", to: file, seconds: 2)
            let p = try Self.probeFile(file.path)
            return r.status == 0 && (p.report?.stampsRead ?? 0) == 60
        }
        // Refused: nobody, a wrong password, a user without the read permission, a wrong
        // passphrase, the passphrase of another stream.
        for query in ["streamid=read:cam", "streamid=read:cam:viewer:wrong", "streamid=%23!::r=cam,m=request,u=pub,s=pub-secret-77",
                      "streamid=read:ops&passphrase=wrong-phrase-1", "streamid=read:cam&passphrase=\(phrase)"] {
            #expect(try !reads(query), "\(query) read")
        }
        // Let in: the reader's user (both syntaxes), and the stream's read passphrase.
        #expect(try reads("streamid=read:cam:viewer:viewer-secret-88"))
        #expect(try reads("streamid=%23!::r=ops,m=request,u=viewer,s=viewer-secret-88"))
        #expect(try reads("streamid=read:ops&passphrase=\(phrase)"))
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "-u", "viewer:viewer-secret-88", "http://127.0.0.1:\(port)/metrics"], timeout: 10).stdout
        #expect(MetricsText.sum(metrics, "liverelay_auth_failures_total") >= 2, "\(metrics.split(separator: "\n").filter { $0.contains("auth") })")
        for secret in ["viewer-secret-88", "pub-secret-77", phrase] {
            #expect(!serve.stdout.contains(secret) && !serve.stderr.contains(secret), "\(secret) reached the log")
        }
    }
}
