import Testing
import Foundation
import Glibc
import TestSupport
import Bench

/// `--log-format json`: every line the process writes, on stdout and stderr, is one JSON object
/// that jq reads — the banner (where each server listens, what each stream offers) included,
/// with the stream as a key, and no credential in it.
@Suite(.ownThreads, .serialized) struct JSONLogTests {
    @Test func everyLineIsAnObjectJqReads() throws {
        let dir = Paths.tempDirectory("jsonlog")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("config.yaml")
        // The RTSP port is chosen here: on port 0 the streams' banner records carry no `rtsp`
        // offer, which this test reads.
        let rtsp = FreePort.tcp()
        // A camera that is not there: its reconnects are logged, its URL's password never. Every
        // server that says where it listens; a recording with a retention, whose pruner is
        // stopped at shutdown (that is not an error of the catalog's).
        try """
        server:
          rtsp: {listen: "127.0.0.1:\(rtsp)"}
        ingest:
          rtmp: {listen: "127.0.0.1:0"}
          srt: {listen: "127.0.0.1:0"}
        streams:
          gone: {source: "rtsp://ops:hunter2-secret@127.0.0.1:\(FreePort.tcp())/cam", preview: false, open_timeout: 1s}
          fine: {source: "testsrc://?size=160x96&fps=10", preview: false, record: {path: "\(dir.path)/rec", segment_duration: 2s, keep: 1h}}
        """.write(to: config, atomically: true, encoding: .utf8)
        let serve = try ChildProcess(Paths.liverelay, ["serve", "--config", config.path, "--listen", "127.0.0.1:0",
                                                       "--state-dir", dir.path, "--log-format", "json", "--verbose"])
        defer { serve.stop() }
        // The banner records are JSON on stderr; each message still reads "… listening on URL".
        let port = try #require(serve.listeningPort("LiveRelay listening on", timeout: 30), "no HTTP server: \(serve.stderr.suffix(2000))")
        let rtmp = try #require(serve.listeningPort("RTMP ingest listening on", timeout: 30), "no RTMP ingest: \(serve.stderr.suffix(2000))")
        let srt = try #require(serve.listeningPort("SRT ingest listening on", timeout: 30), "no SRT ingest: \(serve.stderr.suffix(2000))")
        for said in ["LiveRelay listening on", "RTSP server listening on", "RTMP ingest listening on", "SRT ingest listening on", "WebRTC (WHEP) on"] {
            #expect(serve.waitFor(said, timeout: 20), "\(said): \(serve.stdout) \(serve.stderr.suffix(2000))")
        }
        #expect(serve.waitFor("\"stream\":\"gone\"", timeout: 15), "\(serve.stderr)")
        kill(serve.process.processIdentifier, SIGTERM)
        #expect(serve.wait(timeout: 15))
        // stdout and stderr both: `serve --log-format json 2>&1 | jq -e .`
        let output = serve.stdout + serve.stderr
        let log = dir.appendingPathComponent("output.log")
        try output.write(to: log, atomically: true, encoding: .utf8)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count > 3)
        func jq(_ filter: String) throws -> CommandResult {
            try ChildProcess.run("/usr/bin/jq", ["-e", "-r", filter, log.path], timeout: 20)
        }
        // jq -e fails on any line that is not a JSON object with these keys.
        let records = try jq("select(type == \"object\" and has(\"time\") and has(\"level\") and has(\"message\")) | .level")
        #expect(records.status == 0, "\(records.stderr)")
        #expect(records.stdout.split(separator: "\n").count == lines.count, "\(records.stdout.split(separator: "\n").count) of \(lines.count) lines: \(output)")
        // The banner, as records: each server's URL, each stream's offers by key.
        let base = "http://127.0.0.1:\(port)"
        let banner: [(filter: String, value: String)] = [
            ("select(.message | startswith(\"LiveRelay listening on\")) | .url", "\(base)/"),
            ("select(.message | startswith(\"RTSP server listening on\")) | .url", "rtsp://127.0.0.1:\(rtsp)/"),
            ("select(.message | startswith(\"RTMP ingest listening on\")) | .url", "rtmp://127.0.0.1:\(rtmp)/live/"),
            ("select(.message | startswith(\"SRT ingest listening on\")) | .url", "srt://127.0.0.1:\(srt)"),
            ("select(.stream == \"fine\" and .recordings != null) | .rtsp", "rtsp://127.0.0.1:\(rtsp)/fine"),
            ("select(.stream == \"fine\" and .recordings != null) | .recordings", "\(base)/?only=fine"),
            ("select(.metrics != null) | .metrics", "\(base)/metrics"),
        ]
        for s in banner {
            let r = try jq(s.filter)
            #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == s.value, "\(s.filter): \(r.output)")
        }
        #expect(try jq("select(.message | startswith(\"WebRTC (WHEP) on\")) | .url").stdout.hasPrefix("udp://"))
        let streams = try jq("select(.stream != null) | .stream")
        #expect(streams.stdout.contains("gone"))
        #expect(!output.contains("hunter2-secret"))
        // Shutdown stopped the retention pruner: nothing about it is an error.
        #expect(!output.contains("retention cannot") && !output.contains("CancellationError"), "\(output.suffix(2000))")
    }

    /// What stops serve before it starts is a record too: a configuration refused, a mistyped
    /// flag (ArgumentParser's usage error).
    @Test func aRefusalIsARecordToo() throws {
        let dir = Paths.tempDirectory("jsonlog-refused")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("bad.yaml")
        try "streams:\n  cam: {source: \"testsrc://\", preview: {ordering: sideways}}\n".write(to: config, atomically: true, encoding: .utf8)
        let refused = try ChildProcess.run(Paths.liverelay, ["serve", "--config", config.path, "--state-dir", dir.path, "--log-format", "json"], timeout: 30)
        let mistyped = try ChildProcess.run(Paths.liverelay, ["serve", "--log-format", "json", "--no-such-flag"], timeout: 30)
        for (r, says) in [(refused, "streams.cam.preview.ordering"), (mistyped, "no-such-flag")] {
            #expect(r.status == 2, "\(r.output)")
            let lines = r.output.split(separator: "\n")
            #expect(lines.count == 1, "\(r.output)")
            let record = try? JSONDecoder().decode([String: String].self, from: Data((lines.first ?? "").utf8))
            #expect(record?["level"] == "critical" && record?["message"]?.contains(says) == true, "\(r.output)")
        }
    }
}
