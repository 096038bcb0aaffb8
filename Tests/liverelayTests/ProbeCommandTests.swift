import Testing
import Foundation
import TestSupport
import Relay
import Mux

/// `liverelay probe` against real servers and publishers, as a user runs it.
@Suite(.ownThreads, .serialized) struct ProbeCommandTests {
    func probe(_ args: [String], timeout: Double = 30) throws -> CommandResult {
        try ChildProcess.run(Paths.liverelay, ["probe"] + args, timeout: timeout)
    }

    func json(_ r: CommandResult) throws -> ProbeReport { try json(r.stdout) }

    /// The report `probe --json` printed (its last line).
    func json(_ stdout: String) throws -> ProbeReport {
        let line = try #require(stdout.split(separator: "\n").last)
        return try #require(try? Servers.decode(ProbeReport.self, String(line)), "\(line)")
    }

    /// Starts `liverelay publish` of the stamped test source to a destination.
    func publish(_ destination: String, extra: [String] = []) throws -> ChildProcess {
        try ChildProcess(Paths.liverelay, ["publish", destination, "--source", "testsrc://?size=640x360&fps=30&gop=30"] + extra)
    }

    @Test func rtspOverUDPDecodesAlmostEveryFrameInSoftwareWithAReason() throws {
        let server = try Servers.RTSP()
        let r = try probe([server.url(), "--transport", "udp", "--frames", "100", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try json(r)
        #expect(j.framesDecoded >= 95)
        #expect(j.transport == "udp")
        #expect(j.codec == "h264")
        #expect(j.width == 640 && j.height == 360)
        if !FileManager.default.fileExists(atPath: "/dev/dri") {
            #expect(j.decoderPath == "software")
            #expect(j.fallbackReason == "vaapi: no /dev/dri render node")
        }
        #expect(j.timeToFirstFrameMs != nil)
    }

    @Test func rtspOverTCP() throws {
        let server = try Servers.RTSP()
        let r = try probe([server.url(), "--transport", "tcp", "--frames", "30", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try json(r)
        #expect(j.framesDecoded == 30)
        #expect(j.transport == "tcp")
    }

    @Test func rtmpPullFromNginxCarriesStamps() throws {
        let nginx = try Servers.NginxRTMP()
        let pub = try publish(nginx.url("cam"))
        defer { pub.stop() }
        Thread.sleep(forTimeInterval: 1)
        let r = try probe([nginx.url("cam"), "--frames", "60", "--json"])
        #expect(r.status == 0, "\(r.stderr) \(pub.stderr)")
        let j = try json(r)
        #expect(j.container == "flv")
        #expect(j.framesDecoded == 60)
        #expect(j.stampsRead == 60)
        #expect((j.latencyP50Ms ?? 1e9) < 200)
    }

    /// Runs `probe --listen` on `listenURL`, publishes the stamped test source to `publishURL`
    /// once the probe says it waits, and returns the probe's JSON report.
    func probeWhilePublishing(listenURL: String, publishURL: String, publishExtra: [String] = []) throws -> ProbeReport {
        let listener = try ChildProcess(Paths.liverelay, ["probe", listenURL, "--listen", "--frames", "60", "--timeout", "15", "--json"])
        // Connecting to see whether it listens would be taken for the publisher: wait for its word.
        #expect(listener.waitFor("waiting for a publisher", timeout: 10))
        Thread.sleep(forTimeInterval: 0.3)
        let pub = try publish(publishURL, extra: publishExtra)
        defer { pub.stop() }
        #expect(listener.wait(timeout: 20))
        #expect(listener.exitStatus == 0, "\(listener.stderr) \(pub.stderr)")
        return try json(listener.stdout)
    }

    @Test func rtmpPushIngestIsReadyQuickly() throws {
        let url = "rtmp://127.0.0.1:\(FreePort.tcp())/live/phone"
        let j = try probeWhilePublishing(listenURL: url, publishURL: url)
        #expect(j.framesDecoded == 60)
        #expect(j.stampsRead == 60)
        // Ready at once: FFmpeg's default probing would hold the first frames for seconds.
        #expect((j.latencyMaxMs ?? 1e9) < 400, "\(j)")
    }

    @Test func rtspPublishIngest() throws {
        let url = "rtsp://127.0.0.1:\(FreePort.tcp())/live/cam"
        let j = try probeWhilePublishing(listenURL: url, publishURL: url, publishExtra: ["--transport", "tcp"])
        #expect(j.framesDecoded == 60)
        #expect(j.stampsRead >= 55)
    }

    @Test func srtListenerWithACallerPublishing() throws {
        let port = FreePort.udp()
        let j = try probeWhilePublishing(listenURL: "srt://127.0.0.1:\(port)?mode=listener&latency=20000",
                                         publishURL: "srt://127.0.0.1:\(port)?mode=caller&latency=20000")
        #expect(j.container == "mpegts")
        #expect(j.framesDecoded == 60)
    }

    @Test func aFile() throws {
        let dir = Paths.tempDirectory("probefile")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("clip.mp4")
        try TestMedia.writeFile(file, frames: 50, size: "320x240")
        let r = try probe([file.path, "--frames", "100", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try json(r)
        #expect(j.framesDecoded == 50)
        #expect(j.stampsRead == 50)
        let text = try probe([file.path, "--frames", "10"])
        #expect(text.stdout.contains("decoder:       software") || text.stdout.contains("decoder:       vaapi"))
        // The encoder a rendition would take, and why not hardware (none here).
        let encoder = j.encoder
        #expect(["software", "vaapi", "nvenc"].contains(encoder?.path ?? ""), "\(String(describing: encoder))")
        if encoder?.path == "software" {
            #expect((encoder?.fallbackReason ?? "").contains("VAAPI"), "\(String(describing: encoder))")
            #expect(text.stdout.contains("encoder:       software (libx264)"))
        }
    }

    @Test func unreachableExitsOneWithinThreeSeconds() throws {
        let r = try probe(["rtsp://127.0.0.1:1/x", "--timeout", "2"], timeout: 10)
        #expect(r.status == 1)
        #expect(r.seconds < 3)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("unreachable"))
    }

    /// `--timeout` bounds the whole open: the connect, the stream probe and, for RTSP with
    /// `--transport auto`, the fallback from UDP to TCP (a server that never answered the RTSP
    /// exchange is not asked again over TCP).
    @Test(arguments: ["rtmp://127.0.0.1:PORT/live/x", "rtsp://127.0.0.1:PORT/x"])
    func aSilentPortTimesOutWithinItsDeadline(url: String) throws {
        let silent = TestMedia.SilentServer()
        let r = try probe([url.replacingOccurrences(of: "PORT", with: String(silent.port)), "--timeout", "2"], timeout: 10)
        #expect(r.status == 1)
        #expect(r.seconds < 2.6, "took \(r.seconds) s with --timeout 2")
        #expect(r.stderr.contains("timed out") && r.stderr.contains("within 2.0 s"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    /// Regression: `--option =` once indexed an empty split and killed the process.
    @Test func anOptionWithoutANameIsAUsageError() throws {
        let r = try ChildProcess.run(Paths.liverelay, ["probe", "testsrc://?size=160x96&frames=2", "--option", "="], timeout: 20)
        #expect(r.status == 2, "\(r.output)")
        #expect(r.stderr.contains("--option expects KEY=VALUE"))
    }

    @Test func garbageBytesAreInvalidData() throws {
        let dir = Paths.tempDirectory("garbage")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("noise.bin")
        try Data((0..<100_000).map { _ in UInt8.random(in: 0...255) }).write(to: file)
        let r = try probe([file.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("invalid data"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func passwordsNeverAppearInOutput() throws {
        let server = try Servers.RTSP()
        let secret = "Zq7-very-secret"
        // Against a live server (which ignores the credentials), an unreachable port and a silent one.
        let silent = TestMedia.SilentServer()
        let urls = [
            "rtsp://admin:\(secret)@127.0.0.1:\(server.port)/test",
            "rtsp://admin:\(secret)@127.0.0.1:1/test",
            "rtmp://admin:\(secret)@127.0.0.1:\(silent.port)/live/x",
            "srt://127.0.0.1:\(FreePort.udp())?passphrase=\(secret)&connect_timeout=1000",
        ]
        for url in urls {
            for extra in [["--json"], []] {
                let r = try probe([url, "--frames", "10", "--timeout", "2"] + extra)
                #expect(!r.output.contains(secret), "\(r.output)")
                #expect(!r.output.isEmpty)
            }
        }
    }

    @Test func usageErrorsExitTwo() throws {
        let r = try probe(["rtsp://x/y", "--transport", "carrier-pigeon"])
        #expect(r.status == 2)
        let r2 = try probe(["rtsp://x/y", "--frames", "0"])
        #expect(r2.status == 2)
    }
}
