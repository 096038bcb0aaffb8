import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// Recording and forwarding with real destinations: nginx-rtmp (read back by ffmpeg), an SRT
/// listener (ffmpeg), gst-rtsp-server taking RECORD; a destination that restarts; a relay
/// process that is killed.
@Suite(.ownThreads, .serialized) struct RepublishTests {
    func frames(_ args: [String]) throws -> (Int, String) {
        let r = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error"] + args + ["-f", "framemd5", "-"], timeout: 30)
        return (r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count, r.stderr)
    }

    @Test func forwardsReconnectAndARecordingSurvivesAKill() throws {
        let dir = Paths.tempDirectory("republish")
        defer { try? FileManager.default.removeItem(at: dir) }
        var nginx: Servers.NginxRTMP? = try Servers.NginxRTMP()
        let rtmpPort = nginx!.port
        let rtsp = try Servers.RTSP(records: ["/in"])
        let srtPort = FreePort.udp()
        // The SRT destination: ffmpeg listening, reading what arrives.
        let srtReader = try ChildProcess("/usr/bin/timeout", ["-k", "1", "30", "/usr/bin/ffmpeg", "-v", "error", "-i", "srt://127.0.0.1:\(srtPort)?mode=listener",
                                                              "-t", "3", "-f", "framemd5", "-"])
        // An RTSP destination that reads back what it is sent: ffmpeg as an RTSP server taking RECORD.
        let rtspBackPort = FreePort.tcp()
        let rtspReader = try ChildProcess("/usr/bin/timeout", ["-k", "1", "30", "/usr/bin/ffmpeg", "-v", "error", "-rtsp_flags", "listen", "-i", "rtsp://127.0.0.1:\(rtspBackPort)/back",
                                                               "-t", "3", "-f", "framemd5", "-"])
        let key = "sk_live_0123456789abcdef"
        let config = dir.appendingPathComponent("config.yaml")
        try """
        streams:
          cam:
            source: testsrc://?size=320x180&fps=30&gop=30
            preview: false
            record:
              path: \(dir.appendingPathComponent("rec").path)
            forward:
              - rtmp://127.0.0.1:\(rtmpPort)/live/\(key)
              - srt://127.0.0.1:\(srtPort)?mode=caller
              - \(rtsp.url("/in"))
              - rtsp://127.0.0.1:\(rtspBackPort)/back
        """.write(to: config, atomically: true, encoding: .utf8)
        let serve = try ChildProcess(Paths.liverelay, ["serve", "--config", config.path, "--listen", "127.0.0.1:0", "--state-dir", config.deletingLastPathComponent().path])
        defer { serve.stop() }
        let port = try #require(serve.listeningPort("LiveRelay listening on", timeout: 30), "no HTTP server: \(serve.stderr.suffix(500))")
        Thread.sleep(forTimeInterval: 2)

        // Read back from nginx-rtmp and from the SRT listener.
        let (rtmpFrames, rtmpErr) = try frames(["-i", "rtmp://127.0.0.1:\(rtmpPort)/live/\(key)", "-t", "2"])
        #expect(rtmpFrames >= 55, "RTMP: \(rtmpFrames) frames; \(rtmpErr.suffix(300))")
        #expect(srtReader.wait(timeout: 25))
        #expect(srtReader.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count >= 45, "SRT: \(srtReader.stderr.suffix(300))")
        #expect(rtspReader.wait(timeout: 25))
        #expect(rtspReader.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count >= 45, "RTSP: \(rtspReader.stderr.suffix(300))")

        // The RTMP destination goes away and comes back on the same port: the forward reconnects.
        nginx = nil
        Thread.sleep(forTimeInterval: 2)
        nginx = try Servers.NginxRTMP(port: rtmpPort)
        var back = 0
        let end = Date().addingTimeInterval(20)
        while back < 55 && Date() < end {
            back = try frames(["-i", "rtmp://127.0.0.1:\(rtmpPort)/live/\(key)", "-t", "2"]).0
        }
        #expect(back >= 55, "RTMP after the restart: \(back) frames")
        let api = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 10).stdout
        let j = try #require(try? Servers.decode(StreamView.self, api), "\(api)")
        let forwards = j.forwards
        #expect(forwards.count == 4)
        #expect(forwards[0].reconnects >= 1 && forwards[0].state == .running, "\(forwards[0])")
        #expect(forwards[2].sent > 30, "RTSP RECORD: \(forwards[2])")
        let rtmpSink = try #require(j.sink(named: "forward0"))
        #expect(rtmpSink.counters.dropped[.resync] > 0, "drops while away are counted: \(rtmpSink)")
        // Every packet accounted for: what the forward took while away is a drop, not a delivery.
        let received = rtmpSink.counters.received, delivered = rtmpSink.counters.delivered
        let dropped = rtmpSink.counters.droppedTotal, queued = rtmpSink.queueDepth
        #expect(abs(received - (delivered + dropped + queued)) <= 2, "received \(received) vs delivered \(delivered) + dropped \(dropped) + queued \(queued)")
        // The stream key is a credential: not in the API, not in the logs.
        #expect(!api.contains(key) && !serve.stderr.contains(key) && !serve.stdout.contains(key))

        // Killed outright: the recording plays up to the last fragment.
        kill(serve.process.processIdentifier, SIGKILL)
        serve.process.waitUntilExit()
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("rec").path).filter { $0.hasSuffix(".mp4") }
        try #require(files.count == 1, "\(files)")
        let (recFrames, recErr) = try frames(["-i", dir.appendingPathComponent("rec/\(files[0])").path])
        #expect(recFrames >= 150 && recErr.isEmpty, "recording: \(recFrames) frames; \(recErr.suffix(300))")
    }
}
