import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// The one-port SRT ingest with ffmpeg's SRT caller (libsrt, as encoders and bodycam relays
/// use it): several publishers on one UDP port routed by `streamid`, each needing its stream's
/// passphrase; wrong passphrases, unknown streams, a mode other than publish or request and a
/// second publisher refused in the handshake; and a caller that leaves frees its stream for the next.
@Suite(.ownThreads, .serialized) struct SRTIngestTests {
    static func publisher(_ url: String, seconds: Int, size: String = "160x96") throws -> ChildProcess {
        try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=15", "-t", String(seconds),
                                             "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-f", "mpegts", url])
    }

    /// The stream's status as the API shows it; nil when the answer is not a stream (no such
    /// stream: a refusal's `{"error": …}`).
    static func status(_ port: Int, _ stream: String) throws -> StreamStatus? {
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/\(stream)"], timeout: 10)
        return try? Servers.decode(StreamView.self, r.stdout).stream
    }

    static func waitLive(_ port: Int, _ streams: [String], timeout: Double = 12) throws -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try streams.allSatisfy({ try status(port, $0)?.state == .live }) { return true }
            usleep(200_000)
        }
        return false
    }

    @Test func manyCallersOnOnePortEachWithItsStreamsPassphrase() throws {
        let fleet = "fleet-secret-1", own = "own-secret-22"
        let (serve, port, dir, srtPort) = try Servers.serve("""
        ingest:
          srt: {listen: "127.0.0.1:0", passphrase: "\(fleet)"}
        streams:
          cam1: {source: publish, preview: false, hls: {variant: mpegts, segment_duration: 1s}}
          cam2: {source: publish, preview: false}
          cam3: {source: publish, preview: false}
          cam4: {source: publish, publish_key: "\(own)", preview: false}
          cam5: {source: publish, publish_key: "own-secret-55", preview: false}
        """, listener: "SRT ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "srt://127.0.0.1:\(srtPort)?connect_timeout=3000"
        var publishers: [ChildProcess] = []
        defer { for p in publishers { p.stop() } }
        // SRT's access-control syntax, MediaMTX's, a plain name; a stream with its own passphrase.
        publishers.append(try Self.publisher("\(base)&streamid=#!::r=cam1,m=publish&passphrase=\(fleet)", seconds: 20, size: "320x180"))
        publishers.append(try Self.publisher("\(base)&streamid=publish:cam2&passphrase=\(fleet)", seconds: 20))
        publishers.append(try Self.publisher("\(base)&streamid=cam3&passphrase=\(fleet)", seconds: 4))
        publishers.append(try Self.publisher("\(base)&streamid=cam4&passphrase=\(own)", seconds: 20))
        #expect(try Self.waitLive(port, ["cam1", "cam2", "cam3", "cam4"]), "not all live: \(serve.stderr.suffix(2000))")
        let cam1 = try Self.status(port, "cam1")
        #expect(cam1?.codec == "h264" && cam1?.width == 320, "\(String(describing: cam1))")
        #expect(try Self.status(port, "cam4")?.width == 160)

        // Refused in the handshake: a wrong passphrase, the fleet passphrase for a stream with its
        // own, none at all, an unknown stream, an unknown mode, a second publisher of a live stream.
        for (url, stream) in [("\(base)&streamid=cam5&passphrase=wrong-secret-55", "cam5"), ("\(base)&streamid=cam5&passphrase=\(fleet)", "cam5"),
                              ("\(base)&streamid=cam5", "cam5"), ("\(base)&streamid=nosuch&passphrase=\(fleet)", "nosuch"),
                              ("\(base)&streamid=#!::r=cam5,m=bidirectional&passphrase=own-secret-55", "cam5"),
                              ("\(base)&streamid=cam1&passphrase=\(fleet)", "cam1")] {
            let r = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "15", "/usr/bin/ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15",
                                                              "-t", "2", "-c:v", "libx264", "-f", "mpegts", url], timeout: 30)
            #expect(r.status != 0, "accepted: \(url)")
            if stream == "cam5" { #expect(try Self.status(port, "cam5")?.state != .live, "\(url)") }
        }
        #expect(try Self.status(port, "cam1")?.width == 320, "the second publisher took cam1")
        // Each refusal the handshake made is counted by reason (a wrong passphrase fails inside
        // SRT's own handshake, after the stream's check).
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"], timeout: 10).stdout
        for reason in ["busy", "unknown_stream", "mode"] {
            #expect(metrics.contains("liverelay_ingest_refused_total{protocol=\"srt\",reason=\"\(reason)\"} 1"), "\(reason): \(metrics.split(separator: "\n").filter { $0.contains("refused") })")
        }
        // The publisher's link as libsrt counts it, and its bitrate.
        let cam1Link = ["stream": "cam1"]
        #expect(MetricsText.sum(metrics, "liverelay_srt_packets_received_total", cam1Link) > 10, "\(metrics.split(separator: "\n").filter { $0.contains("srt_") })")
        #expect(MetricsText.samples(metrics, "liverelay_srt_round_trip_seconds").contains { $0.labels["stream"] == "cam1" })
        #expect(MetricsText.samples(metrics, "liverelay_srt_packets_retransmitted_total").contains { $0.labels["stream"] == "cam1" })
        #expect(MetricsText.sum(metrics, "liverelay_stream_bitrate_in_bits_per_second", cam1Link) > 10_000)

        // cam1's HLS is playable: a segment of its media, as ffprobe reads it.
        let playlist = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/streams/cam1/hls/index.m3u8"], timeout: 10).stdout
        let seg = try #require(playlist.split(separator: "\n").first { $0.hasSuffix(".ts") }, "\(playlist)")
        let file = dir.appendingPathComponent("cam1.ts")
        _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", file.path, "http://127.0.0.1:\(port)/streams/cam1/hls/\(seg)"], timeout: 10)
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_name,width,nb_read_frames", "-of", "csv=p=0", file.path], timeout: 10)
        #expect(probe.stdout.hasPrefix("h264,320,"), "\(probe.stdout)")

        // cam3's caller leaves: the stream is free for the next, which resumes it.
        let leave = Date().addingTimeInterval(15)
        while Date() < leave, try Self.status(port, "cam3")?.state == .live { usleep(200_000) }
        let next = try Self.publisher("\(base)&streamid=cam3&passphrase=\(fleet)", seconds: 8, size: "240x136")
        publishers.append(next)
        var resumed: StreamStatus?
        let end = Date().addingTimeInterval(15)
        while Date() < end {
            resumed = try Self.status(port, "cam3")
            if resumed?.width == 240 && resumed?.state == .live { break }
            usleep(200_000)
        }
        #expect(resumed?.width == 240 && resumed?.state == .live, "the returning caller did not resume cam3: \(String(describing: resumed))")
        #expect(!serve.stdout.contains(fleet) && !serve.stderr.contains(fleet) && !serve.stderr.contains(own), "a passphrase reached the log")
    }
}

/// Users instead of passphrases: a user with the publish permission names themselves in the
/// stream ID; a reader, a wrong password or no one is never let publish.
@Suite(.ownThreads, .serialized) struct SRTIngestAccessTests {
    @Test func aUserWithThePublishPermissionPublishesWithoutAPassphrase() throws {
        let (serve, port, dir, srtPort) = try Servers.serve(try RTMPIngestAccessTests.publishUsers() + """
        ingest:
          srt: {listen: "127.0.0.1:0"}
        streams:
          phone1: {source: publish, preview: false}
          phone2: {source: publish, preview: false}
        """, listener: "SRT ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "srt://127.0.0.1:\(srtPort)?connect_timeout=3000"
        for id in ["phone2", "#!::r=phone2,m=publish,u=viewer,s=viewer-secret-88", "publish:phone2:pub:nope"] {
            let p = try SRTIngestTests.publisher("\(base)&streamid=\(id)", seconds: 3)
            usleep(3_500_000)
            #expect(try SRTIngestTests.status(port, "phone2")?.state != .live, "\(id) published")
            p.stop()
        }
        let publisher = try SRTIngestTests.publisher("\(base)&streamid=#!::r=phone1,m=publish,u=pub,s=pub-secret-77", seconds: 10)
        defer { publisher.stop() }
        #expect(try SRTIngestTests.waitLive(port, ["phone1"]), "the user with the publish permission was not taken")
        #expect(!serve.stdout.contains("pub-secret-77") && !serve.stderr.contains("pub-secret-77")
                && !serve.stderr.contains("viewer-secret-88"), "a password reached the log")
    }
}
