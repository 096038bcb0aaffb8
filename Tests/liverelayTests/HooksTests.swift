import Testing
import Foundation
import TestSupport
import Bench
import Crypto
import Relay

/// The `hooks` section: events reach a real HTTP receiver signed and retried, commands run with
/// the event in their environment, and an `exec:` source runs only while it is watched.
@Suite(.ownThreads, .serialized) struct HooksTests {
    struct Received {
        let n: Int
        let answered: Int
        let headers: [String: String]
        let body: String
        /// The body as the webhook type it is; nil when it is not one.
        var json: WebhookBody? { try? JSONDecoder().decode(WebhookBody.self, from: Data(body.utf8)) }
    }

    /// A line of the receiver script's log.
    struct ReceiverLine: Decodable {
        var n: Int?
        var answered: Int?
        var headers: [String: String]?
        var body: String?
    }

    static func received(_ log: URL) -> [Received] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONDecoder().decode(ReceiverLine.self, from: Data(line.utf8)) else { return nil }
            return Received(n: o.n ?? 0, answered: o.answered ?? 0, headers: o.headers ?? [:], body: o.body ?? "")
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(100_000)
        }
        return condition()
    }

    @Test func webhooksAreSignedAndRetriedAndCommandsRun() throws {
        let dir = Paths.tempDirectory("hooks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("received.jsonl")
        let receiver = try ChildProcess(name: "receiver", "/usr/bin/python3",
                                        [Paths.packageRoot.appendingPathComponent("scripts/hook_receiver.py").path, log.path, "--refuse-first", "1"])
        defer { receiver.stop() }
        #expect(receiver.waitFor("listening", timeout: 10))
        let port = try #require(receiver.stdout.split(separator: " ").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        let secret = "hook-secret-0123456789"
        let commandLog = dir.appendingPathComponent("command.log").path
        let yaml = """
        server:
          rtsp: {listen: "127.0.0.1:0"}
        hooks:
          webhooks:
            - {url: "http://127.0.0.1:\(port)/hook", secret: "\(secret)", events: [live, segment_complete, stopped, viewer_joined, viewer_left]}
          commands:
            - {run: 'printf "%s %s %s\\n" "$LIVERELAY_EVENT" "$LIVERELAY_STREAM" "$LIVERELAY_FILE" >> \(commandLog)', events: [live, segment_complete]}
        streams:
          cam: {source: "testsrc://?size=160x96&fps=15&gop=15", preview: false, record: {path: "\(dir.path)/rec", segment_duration: 2s}}
        """
        let (serve, httpPort, _, rtspPort) = try Servers.serve(yaml, dir: dir, listener: "RTSP server")
        defer { serve.stop() }
        // The first delivery is refused (503); the same event comes again, and is taken.
        #expect(Self.waitUntil(20) { Self.received(log).contains { $0.json?.event.rawValue == "segment_complete" && $0.answered == 204 } },
                "\(Self.received(log).map(\.body)) \(serve.stderr)")
        let all = Self.received(log)
        let first = try #require(all.first)
        #expect(first.answered == 503)
        let retry = try #require(all.first { $0.n > 1 && $0.headers["x-liverelay-delivery"] == first.headers["x-liverelay-delivery"] })
        #expect(retry.body == first.body && retry.answered == 204)
        for r in all {
            let mac = HMAC<SHA256>.authenticationCode(for: Array(r.body.utf8), using: SymmetricKey(data: Array(secret.utf8)))
            #expect(r.headers["x-liverelay-signature"] == "sha256=" + Self.hex(mac), "\(r.headers)")
            #expect(r.headers["content-type"] == "application/json")
            #expect(r.json?.stream == "cam")
            #expect(r.json?.time.hasSuffix("Z") == true)
        }
        #expect(all.contains { $0.json?.event.rawValue == "live" })
        // An RTSP client joins and leaves: both told, with the output's kind.
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                                              "rtsp://127.0.0.1:\(rtspPort)/cam"], timeout: 30)
        #expect(probe.stdout.contains("h264"), "\(probe.output)")
        #expect(Self.waitUntil(10) { Self.received(log).contains { $0.json?.event.rawValue == "viewer_left" } })
        let joined = Self.received(log).first { $0.json?.event.rawValue == "viewer_joined" }
        #expect(joined?.json?.details["output"] == "rtsp", "\(joined?.body ?? "none")")
        // Only the events asked for.
        #expect(Self.received(log).allSatisfy { ["live", "segment_complete", "stopped", "viewer_joined", "viewer_left"].contains($0.json?.event.rawValue ?? "") })
        let segment = try #require(all.first { $0.json?.event.rawValue == "segment_complete" }?.json?.details)
        let file = try #require(segment["file"])
        #expect(FileManager.default.fileExists(atPath: file) && Int(segment["bytes"] ?? "") ?? 0 > 0 && segment["sha256"]?.count == 64, "\(segment)")
        // The command ran with the event in its environment.
        #expect(Self.waitUntil(10) { ((try? String(contentsOfFile: commandLog, encoding: .utf8)) ?? "").contains("segment_complete cam \(dir.path)/rec/") },
                "\((try? String(contentsOfFile: commandLog, encoding: .utf8)) ?? "none")")
        #expect(((try? String(contentsOfFile: commandLog, encoding: .utf8)) ?? "").contains("live cam"))
        // Deliveries are counted by result.
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(httpPort)/metrics"], timeout: 10).stdout
        #expect(metrics.contains(#"liverelay_hook_events_total{hook="webhook0",kind="webhook",result="failed_attempt"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"liverelay_hook_events_total{hook="command0",kind="command",result="succeeded"}"#))
        // A graceful stop tells the receiver the stream stopped.
        kill(serve.process.processIdentifier, SIGTERM)
        #expect(serve.wait(timeout: 15))
        #expect(Self.waitUntil(5) { Self.received(log).contains { $0.json?.event.rawValue == "stopped" } })
    }

    /// A command that writes MPEG-TS to its standard output is a source, started by the first
    /// viewer and stopped once the stream is idle.
    @Test func anExecSourceRunsOnlyWhileWatched() throws {
        let marker = "liverelay-exec-\(UUID().uuidString.prefix(8))"
        let command = "ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc=size=160x96:rate=15 -c:v libx264 -preset ultrafast -tune zerolatency -g 15 -metadata comment=\(marker) -f mpegts -"
        let yaml = "streams:\n  lobby: {source: \"exec:\(command)\", on_demand_idle: 2s, preview: {fps: 5}}\n"
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        func running() -> Bool { ((try? ChildProcess.run("/usr/bin/pgrep", ["-f", marker], timeout: 5))?.status ?? 1) == 0 }
        usleep(1_500_000)
        #expect(!running(), "nobody watches: the command is not started")
        // The first viewer starts it and gets a picture.
        var code = ""
        for _ in 0..<4 where code != "200" {
            code = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", dir.appendingPathComponent("s.jpg").path, "-w", "%{http_code}",
                                                          "--max-time", "20", "http://127.0.0.1:\(port)/streams/lobby/snapshot.jpg"], timeout: 25).stdout
        }
        #expect(code == "200", "\(code) \(serve.stderr)")
        let jpeg = (try? Data(contentsOf: dir.appendingPathComponent("s.jpg"))) ?? Data()
        #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]))
        #expect(running())
        // Idle for on_demand_idle: stopped, process group and all.
        #expect(Self.waitUntil(15) { !running() }, "the command still runs after the stream went idle")
    }

    @Test func hookConfigurationErrorsNameTheKey() throws {
        let dir = Paths.tempDirectory("hooks-config")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, String)] = [
            ("hooks: {webhooks: [{url: \"https://ops.example/h\"}]}", "hooks.webhooks[0].secret"),
            ("hooks: {webhooks: [{url: \"ftp://x/h\", secret: \"0123456789abcdef\"}]}", "hooks.webhooks[0].url"),
            ("hooks: {commands: [{run: \"true\", events: [live, lunch]}]}", "hooks.commands[0].events[1]"),
            ("hooks: {commands: [{events: [live]}]}", "hooks.commands[0].run"),
            ("hooks: {max_commands: 0}", "hooks.max_commands"),
        ]
        for (hooks, key) in cases {
            let file = dir.appendingPathComponent("c.yaml")
            try "\(hooks)\nstreams:\n  a: {source: \"testsrc://\"}\n".write(to: file, atomically: true, encoding: .utf8)
            let r = try ChildProcess.run(Paths.liverelay, ["config", "check", file.path], timeout: 20)
            #expect(r.status == 2 && r.stderr.contains(key), "\(hooks): \(r.stderr)")
        }
    }
}
