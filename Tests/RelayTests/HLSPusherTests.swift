import Testing
import Foundation
import Logging
import Relay
import TestSupport
import Glibc

/// The push client against a small HTTP origin whose answers the test scripts (a real server
/// cannot be told to fail the third request): order, retries, DELETEs of what is gone.
@Suite(.ownThreads, .serialized) struct HLSPusherTests {
    /// An origin that logs every request and answers 503 to the requests numbered in `fail`.
    final class Origin: @unchecked Sendable {
        // Safety: immutable after init.
        let child: ChildProcess
        let port: Int
        let log: URL

        init(fail: [Int]) throws {
            port = FreePort.tcp()
            let dir = Paths.tempDirectory("origin")
            log = dir.appendingPathComponent("requests.log")
            let script = dir.appendingPathComponent("origin.py")
            try """
            import http.server, sys
            fail = set(int(x) for x in sys.argv[2].split(",") if x)
            n = 0
            class H(http.server.BaseHTTPRequestHandler):
                def answer(self):
                    global n
                    n += 1
                    length = int(self.headers.get("Content-Length", 0))
                    body = self.rfile.read(length) if length else b""
                    code = 503 if n in fail else (404 if self.command == "DELETE" and "gone" in self.path else (403 if "forbidden" in self.path else 201))
                    with open(sys.argv[3], "a") as f:
                        f.write(f"{n} {self.command} {self.path} {len(body)} {code}\\n")
                    self.send_response(code)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                do_PUT = answer
                do_DELETE = answer
                def log_message(self, *a): pass
            s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
            print("ready", flush=True)
            s.serve_forever()
            """.write(to: script, atomically: true, encoding: .utf8)
            child = try ChildProcess(Servers.python, [script.path, String(port), fail.map(String.init).joined(separator: ","), log.path])
            guard child.waitFor("ready", timeout: 10) else { throw Servers.ServerError("origin did not start: \(child.stderr)") }
        }

        var requests: [(n: Int, method: String, path: String, bytes: Int, code: Int)] {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                let f = line.split(separator: " ")
                guard f.count == 5, let n = Int(f[0]), let b = Int(f[3]), let c = Int(f[4]) else { return nil }
                return (n, String(f[1]), String(f[2]), b, c)
            }
        }
    }

    @Test func sendsInOrderRetriesFailuresAndSkipsWhatIsAlreadyGone() async throws {
        let origin = try Origin(fail: [2, 3])
        let pusher = HLSPusher(base: "http://127.0.0.1:\(origin.port)/live/cam", logger: Logger(label: "test"))
        pusher.start()
        pusher.handle(.file(name: "seg0.ts", data: [1, 2, 3]))
        pusher.handle(.playlist(text: "#EXTM3U\n"))
        pusher.handle(.file(name: "seg1.ts", data: [4]))
        pusher.handle(.removed(name: "gone0.ts"))
        pusher.handle(.playlist(text: "#EXTM3U\n#x\n"))
        let deadline = Date().addingTimeInterval(15)
        while pusher.queued > 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        await pusher.stop(timeout: 2)
        let r = origin.requests
        // Requests 2 and 3 failed (the playlist, twice) and were retried before anything behind them.
        let succeeded = r.filter { $0.code == 201 || $0.code == 404 }.map { "\($0.method) \($0.path)" }
        #expect(succeeded == ["PUT /live/cam/seg0.ts", "PUT /live/cam/index.m3u8", "PUT /live/cam/seg1.ts", "DELETE /live/cam/gone0.ts", "PUT /live/cam/index.m3u8"], "\(r)")
        #expect(r.filter { $0.code == 503 }.map(\.path) == ["/live/cam/index.m3u8", "/live/cam/index.m3u8"])
        #expect(r.first?.bytes == 3)
        let stats = pusher.stats
        #expect(stats.sent == 4 && stats.failures == 3, "\(stats)") // 2 × 503 and the 404 (not retried)
        #expect(pusher.queued == 0)
    }

    @Test(.tags(.fast)) func farBehindItDropsPartsFirstAndKeepsSegmentsAndTheLastPlaylist() async throws {
        // Nothing listens: everything queues.
        let pusher = HLSPusher(base: "http://127.0.0.1:\(FreePort.tcp())/live", logger: Logger(label: "test"))
        for i in 0..<150 {
            pusher.handle(.file(name: "part\(i).0.m4s", data: [0]))
            pusher.handle(.playlist(text: "#\(i)"))
        }
        pusher.handle(.file(name: "seg0.m4s", data: [0]))
        #expect(pusher.queued <= 201, "\(pusher.queued) queued")
        #expect(pusher.stats.dropped >= 100)
    }

    /// An origin that refuses a file (403) does not hold up the files behind it: the file is
    /// given up after a second refusal, counted, and the state says so.
    @Test func aRefusedFileIsGivenUpAndTheRestGoOn() async throws {
        let origin = try Origin(fail: [])
        let pusher = HLSPusher(base: "http://127.0.0.1:\(origin.port)/live", logger: Logger(label: "test"))
        pusher.start()
        pusher.handle(.file(name: "seg0.ts", data: [1]))
        pusher.handle(.file(name: "forbidden1.ts", data: [2]))
        pusher.handle(.file(name: "seg2.ts", data: [3]))
        let deadline = Date().addingTimeInterval(10)
        while pusher.queued > 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let stats = pusher.stats
        await pusher.stop(timeout: 2)
        #expect(stats.rejected == 1 && stats.sent == 2, "\(stats)")
        #expect(origin.requests.filter { $0.path.contains("forbidden") }.count == 2)
        #expect(origin.requests.last?.path == "/live/seg2.ts")
        #expect(stats.queued == 0 && stats.lastError?.contains("403") == true)
    }

    /// The directory writer: the directory removed mid-run is made again; a full disk is
    /// counted and the files behind the one that would not fit still come.
    @Test func theDirectoryWriterRecoversFromARemovedDirectoryAndAFullDisk() async throws {
        let root = Paths.tempDirectory("hlsdir")
        defer { _ = try? ChildProcess.run("/bin/umount", [root.appendingPathComponent("small").path], timeout: 10); try? FileManager.default.removeItem(at: root) }
        let dir = root.appendingPathComponent("hls")
        let writer = try HLSDirectoryWriter(directory: dir.path, logger: Logger(label: "test"))
        writer.start()
        writer.handle(.file(name: "seg0.ts", data: [1, 2, 3]))
        try await Task.sleep(for: .milliseconds(300))
        try FileManager.default.removeItem(at: dir)
        writer.handle(.file(name: "seg1.ts", data: [4]))
        writer.handle(.playlist(text: "#EXTM3U\n"))
        try await Task.sleep(for: .milliseconds(500))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("seg1.ts").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("index.m3u8").path))
        await writer.stop()
        // The full disk is a tmpfs of 64 KiB: mounting one needs root, as the suite runs.
        try #require(getuid() == 0, "the full-disk half of this test mounts a tmpfs: run the suite as root")
        let small = root.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        try #require(try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", small.path], timeout: 10).status == 0)
        let full = try HLSDirectoryWriter(directory: small.path, logger: Logger(label: "test"))
        full.start()
        full.handle(.file(name: "big.ts", data: [UInt8](repeating: 7, count: 200_000)))
        full.handle(.file(name: "next.ts", data: [8]))
        let end = Date().addingTimeInterval(5)
        while !FileManager.default.fileExists(atPath: small.appendingPathComponent("next.ts").path) && Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        let status = full.status
        await full.stop()
        #expect(status.errors >= 3 && status.dropped == 1, "\(status)")
        #expect(status.lastError?.lowercased().contains("space") == true, "\(status.lastError ?? "-")")
        #expect(FileManager.default.fileExists(atPath: small.appendingPathComponent("next.ts").path))
    }
}
