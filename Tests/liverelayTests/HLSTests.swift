import Testing
import Foundation
import TestSupport

/// HLS republish as users meet it: real players (ffmpeg, GStreamer, headless Chromium natively
/// and with hls.js in low-latency mode) on every variant, a strict playlist checker on every
/// reload, a push to a real nginx WebDAV origin, a directory for a web server, upstream restarts
/// and graceful shutdown.
@Suite(.ownThreads, .serialized) struct HLSTests {
    func startServe(_ yaml: String, dir: URL) throws -> (ChildProcess, Int) {
        let s = try Servers.serve(yaml, dir: dir)
        return (s.child, s.port)
    }

    func get(_ url: String) -> String {
        (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", url], timeout: 15).stdout) ?? ""
    }

    /// Polls a playlist every 200 ms until `until`, checking each reload; LL-HLS asks for a
    /// delta update (`_HLS_skip=YES`) every other time, as hls.js does.
    func watch(_ url: String, _ checker: PlaylistChecker, lowLatency: Bool, until: Date) {
        var delta = false
        while Date() < until {
            checker.check(get(url + (delta ? "?_HLS_skip=YES" : "")), lowLatency: lowLatency)
            if lowLatency { delta.toggle() }
            usleep(200_000)
        }
    }

    /// hls.js (from the PyPI gradio wheel, as ../shared/TESTING-RECIPES.md says; fetched by
    /// scripts/hlsjs_page.py, never committed) next to a page that plays `?src=` in LL mode.
    static func hlsJSPage() throws -> (ChildProcess, Int, URL) {
        let dir = Paths.tempDirectory("hlsjs")
        let put = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/hlsjs_page.py").path, dir.path], timeout: 300)
        guard put.status == 0 else { throw Servers.ServerError("hls.js: \(put.stderr.suffix(300))") }
        let port = FreePort.tcp()
        let server = try ChildProcess("/usr/bin/python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", dir.path])
        guard FreePort.waitUntilListening(port) else { throw Servers.ServerError("page server did not start") }
        return (server, port, dir)
    }

    func browser(_ url: String, seconds: Double = 3) throws -> BrowserReport {
        let r = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, url,
                                                          "--video", "video", "--seconds", String(seconds)], timeout: 60)
        return (try? BrowserReport.decode(r.stdout)) ?? BrowserReport(error: r.stdout + r.stderr)
    }

    @Test func everyVariantPlaysInRealPlayersAndEveryReloadIsValid() throws {
        let dir = Paths.tempDirectory("hls")
        defer { try? FileManager.default.removeItem(at: dir) }
        let origin = try Servers.NginxOrigin()
        let (serve, port) = try startServe("""
        streams:
          ts:
            source: testsrc://?size=320x180&fps=30&gop=30
            preview: false
            hls:
              variant: mpegts
              segment_count: 4
              directory: \(dir.appendingPathComponent("www").path)
              push: \(origin.url("live/ts/"))
          mp4:
            source: testsrc://?size=320x180&fps=30&gop=30
            preview: false
            hls: { variant: fmp4, segment_duration: 1s }
          ll:
            source: testsrc://?size=320x180&fps=30&gop=30
            preview: false
            hls: { variant: lowLatency, segment_count: 12, directory: \(dir.appendingPathComponent("www-ll").path) }
        """, dir: dir)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)/streams"
        // ffmpeg reads each live playlist for 25 s of media while the checker reloads all three.
        let readers = try ["ts", "mp4", "ll"].map { name in
            try ChildProcess("/usr/bin/timeout", ["-k", "1", "60", "/usr/bin/ffmpeg", "-v", "error", "-i", "\(base)/\(name)/hls/index.m3u8", "-t", "25", "-f", "framemd5", "-"])
        }
        let checkers = ["ts": PlaylistChecker(), "mp4": PlaylistChecker(), "ll": PlaylistChecker()]
        let until = Date().addingTimeInterval(24)
        let group = DispatchGroup()
        for (name, checker) in checkers {
            DispatchQueue.global().async(group: group) { watch("\(base)/\(name)/hls/index.m3u8", checker, lowLatency: name == "ll", until: until) }
        }
        group.wait()
        for (name, r) in zip(["ts", "mp4", "ll"], readers) {
            #expect(r.wait(timeout: 40), "\(name): ffmpeg did not finish")
            let frames = r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            #expect(r.process.terminationStatus == 0 && r.stderr.isEmpty, "\(name): \(r.stderr.suffix(400))")
            #expect(frames >= 740, "\(name): ffmpeg decoded \(frames) frames of 750")
        }
        for (name, c) in checkers {
            #expect(c.problems.isEmpty, "\(name): \(c.problems.prefix(5))")
            #expect(c.reloads > 50 && c.lastSequence >= 8, "\(name): \(c.reloads) reloads, last segment \(c.lastSequence)")
        }
        // Blocking reload: a request for the next part waits for it; one far ahead is a 400.
        let now = PlaylistChecker.parse(get("\(base)/ll/hls/index.m3u8"))
        let next = try #require(now.preloadHint.flatMap { h -> (Int, Int)? in
            let n = h.dropFirst(4).dropLast(4).split(separator: ".").compactMap { Int($0) }
            return n.count == 2 ? (n[0], n[1]) : nil
        })
        let t0 = Date()
        let blocked = PlaylistChecker.parse(get("\(base)/ll/hls/index.m3u8?_HLS_msn=\(next.0)&_HLS_part=\(next.1)"))
        #expect(Date().timeIntervalSince(t0) < 1.5)
        #expect(blocked.parts.contains { $0.uri == "part\(next.0).\(next.1).m4s" } || blocked.segments.contains { $0.uri == "seg\(next.0).m4s" })
        let far = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/ll/hls/index.m3u8?_HLS_msn=\(next.0 + 50)"], timeout: 10)
        #expect(far.stdout == "400")
        // Delta updates: the oldest segments give way to EXT-X-SKIP; what is listed is the full
        // playlist's tail, at least CAN-SKIP-UNTIL (6 target durations) long.
        var compared = false
        for _ in 0..<5 where !compared {
            let full = PlaylistChecker.parse(get("\(base)/ll/hls/index.m3u8"))
            let delta = PlaylistChecker.parse(get("\(base)/ll/hls/index.m3u8?_HLS_skip=YES"))
            guard full.mediaSequence == delta.mediaSequence, full.segments.count == delta.skipped + delta.segments.count else { continue }
            compared = true
            #expect(full.serverControl?.contains("CAN-SKIP-UNTIL=6.000") == true, "\(full.serverControl ?? "no EXT-X-SERVER-CONTROL")")
            #expect(delta.skipped >= 4, "12 segments of 1 s: \(delta.skipped) skipped")
            #expect(full.segments.dropFirst(delta.skipped).map(\.uri) == delta.segments.map(\.uri))
            #expect(delta.segments.map(\.duration).reduce(0, +) >= 5, "the delta lists \(delta.segments.count) segments")
        }
        #expect(compared, "the playlist kept moving between a full and a delta reload")
        let badSkip = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/ll/hls/index.m3u8?_HLS_skip=maybe"], timeout: 10)
        #expect(badSkip.stdout == "400")
        // Content types and caching.
        let head = try ChildProcess.run("/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", "\(base)/ts/hls/index.m3u8"], timeout: 10).stdout.lowercased()
        // A cache may keep a classic playlist for half a target duration (the edge's requests
        // per reload, EdgeCacheTests); an error is never kept.
        #expect(head.contains("content-type: application/vnd.apple.mpegurl") && head.contains("cache-control: public, max-age="), "\(head)")
        let badHead = try ChildProcess.run("/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", "\(base)/ll/hls/index.m3u8?_HLS_skip=maybe"], timeout: 10).stdout.lowercased()
        #expect(badHead.contains("cache-control: no-store"), "\(badHead)")

        // GStreamer's hlsdemux, on each variant.
        for name in ["ts", "mp4", "ll"] {
            let g = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/gst_play.py").path,
                                                              "\(base)/\(name)/hls/index.m3u8", "--frames", "60", "--timeout", "20"], timeout: 40)
            #expect(g.status == 0, "\(name): GStreamer: \(g.stdout) \(g.stderr.suffix(300))")
        }
        // VLC, as a user runs it (as nobody: it refuses root), on each variant.
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(dir.path, 0o755)
        for name in ["ts", "mp4", "ll"] {
            let file = vlcDir.appendingPathComponent("\(name).ts").path
            let vlc = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "30", "/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/cvlc", "-q", "--play-and-exit",
                                                                "--run-time=4", "\(base)/\(name)/hls/index.m3u8", "--sout", "#std{access=file,mux=ts,dst=\(file)}"], timeout: 40)
            #expect(!vlc.output.contains("main input error"), "\(name): VLC: \(vlc.output.suffix(300))")
            let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v", "-show_entries", "stream=nb_read_packets",
                                                                 "-of", "default=nw=1:nk=1", file], timeout: 20)
            #expect((probe.stdout.split(separator: "\n").first.flatMap { Int($0) } ?? 0) >= 30, "\(name): VLC wrote \(probe.output)")
        }
        // Headless Chromium: native HLS in <video> for the classic variants, hls.js (low-latency
        // mode) for LL-HLS.
        let (pageServer, pagePort, pageDir) = try Self.hlsJSPage()
        defer { pageServer.stop(); try? FileManager.default.removeItem(at: pageDir) }
        for name in ["ts", "mp4"] {
            let page = dir.appendingPathComponent("native-\(name).html")
            try "<!doctype html><body style=margin:0><video id=video muted autoplay playsinline src=\"\(base)/\(name)/hls/index.m3u8\"></video>"
                .write(to: page, atomically: true, encoding: .utf8)
            try FileManager.default.copyItem(at: page, to: pageDir.appendingPathComponent("native-\(name).html"))
            let b = try browser("http://127.0.0.1:\(pagePort)/native-\(name).html")
            #expect((b.advanced ?? 0) > 2, "\(name): Chromium native: \(b)")
        }
        let ll = try browser("http://127.0.0.1:\(pagePort)/hlsjs.html?src=\(base)/ll/hls/index.m3u8&edge=http://127.0.0.1:\(port)")
        #expect((ll.advanced ?? 0) > 2, "ll: hls.js: \(ll)")
        // Kept at the live edge by LiveRelay's own script, served to a page elsewhere.
        #expect(ll.hlsjs?.keptLive == true && ll.hlsjs?.edgeError == nil, "ll: hls.js: \(ll)")
        // hls.js reloads with delta updates (it asks for them when CAN-SKIP-UNTIL is offered).
        let hlsjs = ll.hlsjs
        #expect((hlsjs?.skippedSegments ?? 0) > 0 && hlsjs?.deltaUpdateFailed == false, "ll: hls.js: \(ll)")

        // The same HLS went to the directory and to the origin, which plays it too and holds
        // only the window and the segments that left it in the last segment + playlist
        // duration (RFC 8216 §6.2.2); older ones were deleted.
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("www/index.m3u8").path))
        // LL-HLS on disk: parts listed, but nothing a static server cannot do (hold a request,
        // answer _HLS_skip, serve a part before it exists).
        let llDisk = (try? String(contentsOf: dir.appendingPathComponent("www-ll/index.m3u8"), encoding: .utf8)) ?? ""
        #expect(llDisk.contains("#EXT-X-PART:") && llDisk.contains("#EXT-X-SERVER-CONTROL:PART-HOLD-BACK="), "\(llDisk.prefix(300))")
        #expect(!llDisk.contains("CAN-BLOCK-RELOAD") && !llDisk.contains("CAN-SKIP-UNTIL") && !llDisk.contains("PRELOAD-HINT"), "\(llDisk.prefix(300))")
        let fromOrigin = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "30", "/usr/bin/ffmpeg", "-v", "error", "-i", origin.url("live/ts/index.m3u8"),
                                                                   "-t", "3", "-f", "framemd5", "-"], timeout: 40)
        #expect(fromOrigin.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count >= 85, "origin: \(fromOrigin.stderr.suffix(300))")
        let pushed = (try? FileManager.default.contentsOfDirectory(atPath: origin.root.appendingPathComponent("live/ts").path)) ?? []
        // 4 listed, 5 held (2 s + 8 s after leaving), one being replaced.
        #expect(pushed.filter { $0.hasSuffix(".ts") }.count <= 10, "\(pushed.sorted())")
        #expect(origin.accessLog.contains("\"DELETE /live/ts/seg0.ts"))
    }

    /// The upstream RTSP server is killed and restarted mid-stream: the playlist stays valid and
    /// playable (ffmpeg, VLC) with a discontinuity; SIGTERM ends it with ENDLIST, on disk too.
    @Test func upstreamRestartGivesADiscontinuityAndShutdownEndsThePlaylist() throws {
        let dir = Paths.tempDirectory("hls-restart")
        defer { try? FileManager.default.removeItem(at: dir) }
        var rtsp: Servers.RTSP? = try Servers.RTSP()
        let rtspPort = rtsp!.port
        let www = dir.appendingPathComponent("www")
        let (serve, port) = try startServe("""
        streams:
          cam:
            source: rtsp://127.0.0.1:\(rtspPort)/test
            transport: tcp
            preview: false
            hls:
              variant: mpegts
              segment_duration: 1s
              playlist: event
              directory: \(www.path)
        """, dir: dir)
        defer { serve.stop() }
        let url = "http://127.0.0.1:\(port)/streams/cam/hls/index.m3u8"
        let checker = PlaylistChecker()
        func waitFor(_ seconds: Double, _ condition: (PlaylistChecker.Parsed) -> Bool) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                let text = get(url)
                checker.check(text)
                if condition(PlaylistChecker.parse(text)) { return true }
                usleep(200_000)
            }
            return false
        }
        #expect(waitFor(20) { $0.segments.count >= 3 })
        rtsp = nil // killed
        Thread.sleep(forTimeInterval: 1.5)
        rtsp = try Servers.RTSP(port: rtspPort)
        let resumed = waitFor(30) { p in
            guard let d = p.segments.firstIndex(where: { $0.discontinuity }) else { return false }
            return p.segments.count - d >= 3
        }
        #expect(resumed, "no discontinuity followed by segments: \(get(url))")
        #expect(checker.problems.isEmpty, "\(checker.problems.prefix(5))")
        // Still playable across the gap: ffmpeg from the live playlist, VLC as a user runs it.
        let ff = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "30", "/usr/bin/ffmpeg", "-v", "error", "-i", url, "-t", "3", "-f", "framemd5", "-"], timeout: 40)
        #expect(ff.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count >= 80, "\(ff.stderr)")
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(dir.path, 0o755)
        let vlcOut = vlcDir.appendingPathComponent("out.ts").path
        let vlc = try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "30", "/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/cvlc", "-q", "--play-and-exit",
                                                            "--run-time=4", url, "--sout", "#std{access=file,mux=ts,dst=\(vlcOut)}"], timeout: 40)
        #expect(!vlc.output.contains("main input error"), "\(vlc.output.suffix(300))")
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v", "-show_entries", "stream=nb_read_packets",
                                                             "-of", "default=nw=1:nk=1", vlcOut], timeout: 20)
        #expect((probe.stdout.split(separator: "\n").first.flatMap { Int($0) } ?? 0) >= 30, "VLC wrote \(probe.stdout.debugDescription) \(vlc.output)")

        // Graceful shutdown: the playlist ends, on disk, and every segment in it plays.
        serve.process.terminate()
        #expect(serve.wait(timeout: 8))
        let onDisk = (try? String(contentsOf: www.appendingPathComponent("index.m3u8"), encoding: .utf8)) ?? ""
        #expect(onDisk.hasSuffix("#EXT-X-ENDLIST\n"), "\(onDisk.suffix(200))")
        let parsed = PlaylistChecker.parse(onDisk)
        #expect(parsed.segments.first?.uri == "seg0.ts", "an event playlist keeps every segment")
        let all = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", www.appendingPathComponent("index.m3u8").path, "-f", "null", "-"], timeout: 60)
        #expect(all.status == 0 && all.stderr.isEmpty, "\(all.stderr)")
    }
}
