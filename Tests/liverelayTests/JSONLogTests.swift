import Testing
import Foundation
import Glibc
import TestSupport
import Bench

/// `--log-format json`: every line on stderr is one JSON object that jq reads, with the stream
/// as a key, and no credential in it.
@Suite(.serialized) struct JSONLogTests {
    @Test func everyLineIsAnObjectJqReads() throws {
        let dir = Paths.tempDirectory("jsonlog")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("config.yaml")
        // A camera that is not there: its reconnects are logged, its URL's password never.
        try """
        streams:
          gone: {source: "rtsp://ops:hunter2-secret@127.0.0.1:\(FreePort.tcp())/cam", preview: false, open_timeout: 1s}
          fine: {source: "testsrc://?size=160x96&fps=10", preview: false}
        """.write(to: config, atomically: true, encoding: .utf8)
        let port = FreePort.tcp()
        let serve = try ChildProcess(Paths.liverelay, ["serve", "--config", config.path, "--listen", "127.0.0.1:\(port)",
                                                       "--state-dir", dir.path, "--log-format", "json", "--verbose"])
        defer { serve.stop() }
        #expect(serve.waitFor("listening on", timeout: 20))
        #expect(serve.waitFor("\"stream\":\"gone\"", timeout: 15), "\(serve.stderr)")
        kill(serve.process.processIdentifier, SIGTERM)
        #expect(serve.wait(timeout: 15))
        let log = dir.appendingPathComponent("stderr.log")
        try serve.stderr.write(to: log, atomically: true, encoding: .utf8)
        let lines = serve.stderr.split(separator: "\n")
        #expect(lines.count > 3)
        // jq -e fails on any line that is not a JSON object with these keys.
        let jq = try ChildProcess.run("/usr/bin/jq", ["-e", "-c", "select(type == \"object\" and has(\"time\") and has(\"level\") and has(\"message\")) | .level", log.path], timeout: 20)
        #expect(jq.status == 0, "\(jq.stderr)")
        #expect(jq.stdout.split(separator: "\n").count == lines.count, "\(jq.stdout.split(separator: "\n").count) of \(lines.count) lines: \(serve.stderr)")
        let streams = try ChildProcess.run("/usr/bin/jq", ["-r", "select(.stream != null) | .stream", log.path], timeout: 20)
        #expect(streams.stdout.contains("gone"))
        #expect(!serve.stderr.contains("hunter2-secret"))
    }
}
