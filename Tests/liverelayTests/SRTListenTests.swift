import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// An SRT listen source carries its credential, the passphrase: a caller with another one is
/// refused before any media, whether it comes first or while the rightful publisher is live,
/// and the stream stays with the rightful publisher.
@Suite(.ownThreads, .serialized) struct SRTListenTests {
    /// The stream's status as the API shows it; nil when the answer is not a stream.
    static func status(_ port: Int, _ stream: String) throws -> StreamStatus? {
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/api/streams/\(stream)"], timeout: 10)
        return try? Servers.decode(StreamView.self, r.stdout).stream
    }

    /// ffmpeg pushing 640x360 MPEG-TS over SRT with this passphrase; its exit status and stderr.
    static func intruder(_ srtPort: Int, passphrase: String) throws -> (status: Int32, stderr: String) {
        let r = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "15", "/usr/bin/ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                                                          "-t", "4", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-f", "mpegts",
                                                          "srt://127.0.0.1:\(srtPort)?mode=caller&passphrase=\(passphrase)&connect_timeout=2000"], timeout: 30)
        return (r.status, r.stderr)
    }

    @Test func aCallerWithAnotherPassphraseIsRefusedAndTheRightfulOneKeepsTheStream() throws {
        let srtPort = FreePort.udp()
        let secret = "rightful-pass-1234"
        let (serve, port, dir) = try Servers.serve("""
        streams:
          field:
            source: "srt://127.0.0.1:\(srtPort)?mode=listener&passphrase=\(secret)"
            listen: true
            preview: false
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }

        // First comes a caller with the wrong passphrase: refused, the stream never goes live.
        let first = try Self.intruder(srtPort, passphrase: "intruder-pass-999")
        #expect(first.status != 0, "a wrong passphrase was accepted: \(first.stderr)")
        #expect(try Self.status(port, "field")?.state != .live)

        // The rightful publisher (the stamped source at 320x180) is taken.
        let rightful = try ChildProcess(Paths.liverelay, ["publish", "srt://127.0.0.1:\(srtPort)?mode=caller&passphrase=\(secret)",
                                                          "--source", "testsrc://?size=320x180&fps=30&gop=30", "--duration", "30"])
        defer { rightful.stop() }
        var live: StreamStatus?
        let end = Date().addingTimeInterval(15)
        while Date() < end {
            live = try Self.status(port, "field")
            if live?.state == .live && live?.width == 320 { break }
            usleep(200_000)
        }
        #expect(live?.state == .live && live?.width == 320, "\(String(describing: live))")
        let connections = live?.connections

        // A second caller with the wrong passphrase while the rightful one is live: refused too.
        let second = try Self.intruder(srtPort, passphrase: "intruder-pass-999")
        #expect(second.status != 0, "a wrong passphrase was accepted while live: \(second.stderr)")
        usleep(1_000_000)
        let after = try Self.status(port, "field")
        #expect(after?.state == .live && after?.width == 320 && after?.connections == connections,
                "the stream left its rightful publisher: \(String(describing: after))")
        #expect((after?.fpsIn ?? 0) > 20, "\(String(describing: after))")
        #expect(!serve.stdout.contains(secret) && !serve.stderr.contains(secret), "the passphrase reached the log")
    }
}
