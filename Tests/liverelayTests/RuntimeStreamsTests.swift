import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// Streams made, replaced and removed while the server runs: by the API, and by a SIGHUP that
/// re-reads the configuration and applies only what changed.
@Suite(.ownThreads, .serialized) struct RuntimeStreamsTests {
    static func curl(_ args: [String]) throws -> (code: String, body: String) {
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}"] + args, timeout: 20)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    static func state(_ port: Int, _ name: String) throws -> StreamStatus? {
        let r = try curl(["http://127.0.0.1:\(port)/api/streams/\(name)"])
        guard r.code == "200" else { return nil }
        return try RelayAPI.decoder.decode(StreamView.self, from: Data(r.body.utf8)).stream
    }

    @Test func theAPIAddsReplacesAndRemovesStreams() throws {
        let (serve, port, dir) = try Servers.serve("streams:\n  a: {source: \"testsrc://?size=160x96&fps=10\", preview: false}\n")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let api = "http://127.0.0.1:\(port)/api/streams"
        let json = ["-H", "Content-Type: application/json", "-X"]
        let added = try Self.curl(json + ["POST", "--data", #"{"name": "b", "source": "testsrc://?size=160x96&fps=10", "hls": {"variant": "mpegts"}}"#, api])
        #expect(added.code == "201", "\(added)")
        usleep(2_500_000)
        #expect(try Self.state(port, "b")?.state == .live)
        let playlist = try Self.curl(["\(api.replacingOccurrences(of: "/api/streams", with: "/streams"))/b/hls/index.m3u8"])
        #expect(playlist.code == "200" && playlist.body.contains("#EXTINF"), "\(playlist)")
        // Checked as the file is: the problem names its key.
        let bad = try Self.curl(json + ["POST", "--data", #"{"name": "c", "source": "testsrc://", "hls": {"variant": "dash"}}"#, api])
        #expect(bad.code == "400" && bad.body.contains("streams.c.hls.variant"), "\(bad)")
        #expect(try Self.curl(json + ["POST", "--data", #"{"name": "b", "source": "testsrc://"}"#, api]).code == "409")
        #expect(try Self.curl(json + ["POST", "--data", #"{"source": "testsrc://"}"#, api]).code == "400")
        // Replaced: the new settings take effect.
        let replaced = try Self.curl(json + ["PUT", "--data", #"{"source": "testsrc://?size=320x180&fps=10", "title": "Lobby"}"#, "\(api)/b"])
        #expect(replaced.code == "200" && replaced.body.contains("Lobby"), "\(replaced)")
        // Removed: gone from the API; the other stream never noticed.
        #expect(try Self.curl(["-X", "DELETE", "\(api)/b"]).code == "204")
        #expect(try Self.state(port, "b") == nil)
        #expect(try Self.curl(["-X", "DELETE", "\(api)/b"]).code == "404")
        #expect(try Self.state(port, "a")?.connections == 1)
    }

    /// The API's changes are kept in the catalog (SQLite in the state directory) and layered on
    /// the file at the next start: a stream made is there again, one removed stays removed, and
    /// the API says which streams the API set.
    @Test func streamsChangedThroughTheAPISurviveARestart() throws {
        let yaml = "streams:\n  a: {source: \"testsrc://?size=160x96&fps=10\", preview: false}\n  gone: {source: \"testsrc://?size=160x96&fps=10\", preview: false}\n"
        let dir = Paths.tempDirectory("catalog")
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            let (serve, port, _) = try Servers.serve(yaml, dir: dir)
            defer { serve.stop() }
            let api = "http://127.0.0.1:\(port)/api/streams"
            let json = ["-H", "Content-Type: application/json", "-X"]
            #expect(try Self.curl(json + ["POST", "--data", #"{"name": "b", "source": "testsrc://?size=160x96&fps=10", "title": "Made at run time"}"#, api]).code == "201")
            #expect(try Self.curl(json + ["PUT", "--data", #"{"source": "testsrc://?size=160x96&fps=10", "title": "Replaced"}"#, "\(api)/a"]).code == "200")
            #expect(try Self.curl(["-X", "DELETE", "\(api)/gone"]).code == "204")
        }
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("catalog.sqlite").path))
        let list = try Self.curl(["http://127.0.0.1:\(port)/api/streams"])
        let views = try #require(try? RelayAPI.decoder.decode([StreamView].self, from: Data(list.body.utf8)), "\(list)")
        let byName = Dictionary(uniqueKeysWithValues: views.map { ($0.stream.name, $0) })
        #expect(Set(byName.keys) == ["a", "b"], "\(byName.keys.sorted())")
        #expect(byName["b"]?.stream.title == "Made at run time")
        #expect(byName["a"]?.stream.title == "Replaced")
        #expect(byName["a"]?.origin == "api" && byName["b"]?.origin == "api")
    }

    @Test func sighupAppliesOnlyWhatChanged() throws {
        let (serve, port, dir) = try Servers.serve("""
        streams:
          keep: {source: "testsrc://?size=160x96&fps=15&gop=15", preview: {fps: 10}, hls: {variant: mpegts, segment_duration: 1s}}
          drop: {source: "testsrc://?size=160x96&fps=10", preview: false}

        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(3_000_000)
        // A viewer of the unchanged stream, held across the reload.
        let viewer = try ChildProcess("/usr/bin/curl", ["-sN", "-o", "/dev/null", "--max-time", "12", "http://127.0.0.1:\(port)/streams/keep/preview.mjpg"])
        defer { viewer.stop() }
        func sequence() throws -> Int {
            let p = try Self.curl(["http://127.0.0.1:\(port)/streams/keep/hls/index.m3u8"]).body
            let line = p.split(separator: "\n").first { $0.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") } ?? ""
            return Int(line.split(separator: ":").last ?? "") ?? -1
        }
        let before = try sequence()
        let sinceBefore = try #require(try Self.state(port, "keep")?.since)
        try """
        streams:
          keep: {source: "testsrc://?size=160x96&fps=15&gop=15", preview: {fps: 10}, hls: {variant: mpegts, segment_duration: 1s}}
          new: {source: "testsrc://?size=160x96&fps=10", preview: false}

        """.write(to: dir.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
        kill(serve.process.processIdentifier, SIGHUP)
        usleep(3_000_000)
        #expect(try Self.state(port, "new")?.state == .live)
        #expect(try Self.state(port, "drop") == nil)
        let keep = try #require(try Self.state(port, "keep"))
        #expect(keep.connections == 1, "the unchanged stream reconnected: \(keep)")
        #expect(keep.since == sinceBefore, "its since moved: \(keep)")
        #expect(try sequence() >= before && before >= 0, "its HLS sequence went back")
        #expect(viewer.exitStatus == nil, "its viewer was dropped")
        // A broken file changes nothing and says why.
        try "streams: [".write(to: dir.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
        kill(serve.process.processIdentifier, SIGHUP)
        usleep(1_000_000)
        #expect(try Self.state(port, "new")?.state == .live)
        #expect(serve.stderr.contains("configuration not reloaded") || serve.stdout.contains("configuration not reloaded"), "\(serve.stderr.suffix(500))")
    }
}

/// A publish stream removed while its publisher pushes: the publisher is dropped, the server
/// lives on (a write into a pipe whose reader left must not raise SIGPIPE).
@Suite(.ownThreads, .serialized) struct RemovedUnderAPublisherTests {
    @Test func removingALiveRTMPStreamDropsItsPublisherAndNothingElse() throws {
        let (serve, port, dir, rtmpPort) = try Servers.serve("ingest:\n  rtmp: {listen: \"127.0.0.1:0\"}\nstreams:\n  phone: {source: publish, preview: false}\n  other: {source: \"testsrc://?size=160x96&fps=10\", preview: false}\n", listener: "RTMP ingest")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let publisher = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "20",
                                                             "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "flv", "rtmp://127.0.0.1:\(rtmpPort)/live/phone"])
        defer { publisher.stop() }
        usleep(3_000_000)
        #expect(try RuntimeStreamsTests.state(port, "phone")?.state == .live)
        #expect(try RuntimeStreamsTests.curl(["-X", "DELETE", "http://127.0.0.1:\(port)/api/streams/phone"]).code == "204")
        #expect(publisher.wait(timeout: 15), "the publisher of a removed stream was not dropped")
        #expect(serve.exitStatus == nil, "the server died: \(serve.stderr.suffix(300))")
        #expect(try RuntimeStreamsTests.state(port, "other")?.state == .live)
    }
}

/// On-demand pull sources: connected only while something consumes them, closed when idle, and
/// the first client of each kind gets a picture or a playlist, not an error or the slate.
@Suite(.ownThreads, .serialized) struct OnDemandTests {
    @Test func theFirstClientSucceedsAndAnIdleSourceIsClosed() throws {
        let camera = try Servers.RTSP()
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "\(camera.url())", transport: tcp, on_demand: true, on_demand_idle: 2s, preview: {fps: 10}}
          hlscam: {source: "\(camera.url())", transport: tcp, on_demand: true, preview: false, hls: {variant: mpegts, segment_duration: 1s}}

        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(1_500_000)
        let idle = try #require(try RuntimeStreamsTests.state(port, "cam"))
        #expect(idle.state == .idle && idle.connections == 0, "connected with nobody watching: \(idle)")
        // The first snapshot waits for the first picture.
        let shot = dir.appendingPathComponent("first.jpg").path
        let first = try ChildProcess.run("/usr/bin/curl", ["-s", "-D", "-", "-o", shot, "--max-time", "10", "http://127.0.0.1:\(port)/streams/cam/snapshot.jpg"], timeout: 15)
        #expect(first.stdout.hasPrefix("HTTP/1.1 200") && first.stdout.lowercased().contains("image/jpeg") && !first.stdout.contains("X-LiveRelay-Signal"), "\(first.stdout)")
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > 1000)
        #expect(try RuntimeStreamsTests.state(port, "cam")?.state == .live)
        // Nobody asks for 2 s: closed again.
        usleep(4_000_000)
        #expect(try RuntimeStreamsTests.state(port, "cam")?.state == .idle)
        let again = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "http://127.0.0.1:\(port)/streams/cam/snapshot.jpg"], timeout: 15)
        #expect(again.stdout == "200")
        #expect(try RuntimeStreamsTests.state(port, "cam")?.connections == 2)
        // A player's first playlist request waits for the first segment.
        let playlist = try RuntimeStreamsTests.curl(["--max-time", "15", "http://127.0.0.1:\(port)/streams/hlscam/hls/index.m3u8"])
        #expect(playlist.code == "200" && playlist.body.contains("#EXTINF"), "\(playlist)")
    }
}
