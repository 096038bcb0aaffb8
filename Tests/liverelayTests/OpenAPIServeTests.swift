import Testing
import Foundation
import TestSupport
import Bench

/// The OpenAPI document against a running server: every operation called (reads on a recording
/// stream, writes on a stream the check makes and removes), each answer's status documented and
/// each JSON body meeting its schema (scripts/openapi_check.py, JSON Schema 2020-12).
@Suite(.ownThreads, .serialized) struct OpenAPIServeTests {
    @Test func everyAnswerMeetsTheDocument() throws {
        let dir = Paths.tempDirectory("openapi")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (serve, port, _) = try Servers.serve("""
        streams:
          cam: {source: "testsrc://?size=160x96&fps=15&gop=15", title: Lobby, hls: {variant: lowLatency}, record: {path: "\(dir.path)/rec", segment_duration: 2s}}
        """, dir: dir)
        defer { serve.stop() }
        let began = Date()
        // Two recorded files, so that the manifest and the clip have something to describe.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("rec").path)) ?? []
            if files.count >= 3 { break }
            usleep(250_000)
        }
        let start = ISO8601DateFormatter().string(from: began.addingTimeInterval(1))
        let r = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/openapi_check.py").path, "http://127.0.0.1:\(port)",
                                                          "--param", "name=cam", "--param", "stream=cam", "--param", "sink=preview", "--param", "file=index.m3u8",
                                                          "--param", "id=999", "--write-param", "name=openapi-check",
                                                          "--query", "recordingManifest=start=\(start)&duration=2", "--query", "recordingClip=start=\(start)&duration=2"],
                                     timeout: 120)
        #expect(r.status == 0, "\(r.output)")
        // The reads that matter answered 200 and were checked against their schemas.
        for line in ["ok    GET /api/streams/cam -> 200", "ok    GET /api/streams -> 200", "ok    GET /api/recordings/cam -> 200",
                     "ok    POST /api/streams -> 201", "ok    PATCH /api/streams/openapi-check/sinks/preview -> 200",
                     "GET /streams/cam/recording.json?start=\(start)&duration=2 -> 200", "ok    GET /api/openapi.json -> 200"] {
            #expect(r.stdout.contains(line), "\(line): \(r.stdout)")
        }
        let checked = r.stdout.split(separator: "\n").last { $0.hasPrefix("checked ") }.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(checked >= 30, "\(r.stdout)")
    }
}
