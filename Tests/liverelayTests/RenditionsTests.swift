import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI
import Mux

/// A ladder from one camera: decoded once, scaled and encoded per rendition (libx264 here: no
/// render node, no CUDA), served as streams of their own, listed in a multivariant playlist,
/// encoded only while watched, keyframes at the source's times.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct RenditionsTests {
    /// The stream the API shows at `url`; nil when nothing (or not a stream) answers.
    static func view(_ url: String) -> StreamView? {
        Servers.apiIfAny(StreamView.self, url, maxTime: 5)
    }

    /// The hls.js page script's JSON line: whether each step happened.
    struct LadderResult: Decodable {
        var levelsOk: Bool?
        var top: Bool?
        var down: Bool?
        var up: Bool?
        var playing: Bool?
        var error: String?
    }

    static func get(_ url: String) throws -> String {
        try ChildProcess.run("/usr/bin/curl", ["-s", "-m", "10", url], timeout: 15).stdout
    }

    /// The presentation time of each segment's first video packet, by the segment's URI.
    static func segmentStarts(_ base: String, playlist: String, dir: URL) throws -> [Double] {
        var out: [Double] = []
        for line in playlist.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
            let file = dir.appendingPathComponent(UUID().uuidString + ".ts").path
            _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-m", "10", "-o", file, base + line], timeout: 15)
            let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                                             "-read_intervals", "%+#1", "-of", "csv=p=0", file], timeout: 30)
            // csv prints `9.000000,`.
            if let first = r.stdout.split(separator: "\n").first, let t = Double(first.split(separator: ",").first ?? "") { out.append(t) }
        }
        return out
    }

    @Test(.tags(.exclusive)) func aLadderEncodedOnlyWhileWatchedWithTheSourcesKeyframeTimes() throws {
        let yaml = """
        server: {rtsp: {listen: "127.0.0.1:0"}}
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30"
            preview: false
            hls: {variant: mpegts, segment_duration: 1s}
            renditions:
              - {name: 240p, height: 240, bitrate: 300k}
              - {name: small, size: 320x180, bitrate: 150k, fps: 15}
        """
        let (serve, port, dir, rtsp) = try Servers.serve(yaml, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)"

        // Nobody watches a rendition: nothing encodes, nothing decodes.
        Thread.sleep(forTimeInterval: 2)
        let idleCPU0 = serve.cpuSeconds
        Thread.sleep(forTimeInterval: 4)
        let idleCPU = (serve.cpuSeconds - idleCPU0) / 4
        let idle = Self.view("\(base)/api/streams/cam_240p")
        #expect(idle?.stream.state == .idle, "cam_240p: \(String(describing: idle?.stream))")
        #expect(idle?.rendition?.encoding != true)
        #expect(Self.view("\(base)/api/streams/cam")?.stream.decoding == false)

        // A viewer of the 240p rendition over RTSP: 426x240 (the source's shape), every picture.
        let watching = try ChildProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-rtsp_transport", "tcp",
                                                            "-i", "rtsp://127.0.0.1:\(rtsp)/cam_240p", "-t", "12", "-f", "null", "-"])
        defer { watching.stop() }
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v", "-count_frames",
                                                             "-read_intervals", "%+2", "-show_entries", "stream=width,height,nb_read_frames",
                                                             "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/cam_240p"], timeout: 60)
        let f = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        #expect(f.count == 3 && f[0] == "426" && f[1] == "240", "ffprobe: \(probe.output.prefix(300))")
        #expect((Int(f.last ?? "") ?? 0) >= 40, "frames in 2 s: \(probe.output.prefix(300))")
        let busyCPU0 = serve.cpuSeconds
        Thread.sleep(forTimeInterval: 4)
        let busyCPU = (serve.cpuSeconds - busyCPU0) / 4
        print("renditions: serve CPU \(String(format: "%.1f", idleCPU * 100)) % of a core with no rendition watched, \(String(format: "%.1f", busyCPU * 100)) % with one")
        #expect(busyCPU > idleCPU + 0.02, "encoding shows in CPU: idle \(idleCPU), watched \(busyCPU)")

        // The API says which encoder and why not a hardware one.
        let r = Self.view("\(base)/api/streams/cam_240p")?.rendition
        let encoder = r?.encoder
        #expect(r?.encoding == true)
        #expect(r?.of == "cam")
        let encodeMs = r?.encodeMilliseconds ?? 0
        #expect(encodeMs > 0 && encodeMs < 100, "the encoder's own time per picture: \(encodeMs) ms")
        #expect(encoder?.encoder == "libx264", "\(String(describing: r))")
        #expect(encoder?.path == "software")
        let why = encoder?.fallbackReason ?? ""
        #expect(why.contains("VAAPI") && why.contains("NVENC"), "fallback reason: \(why)")

        // The multivariant playlist lists the source and both renditions.
        let master = try Self.get("\(base)/streams/cam/hls/master.m3u8")
        #expect(master.contains("RESOLUTION=640x360"), "\(master)")
        #expect(master.contains("RESOLUTION=426x240"))
        #expect(master.contains("RESOLUTION=320x180"))
        #expect(master.contains("FRAME-RATE=15.000"))
        #expect(master.contains("/streams/cam_small/hls/index.m3u8"))
        #expect(master.components(separatedBy: "CODECS=\"avc1.").count == 4, "every variant says its codecs: \(master)")

        // Segments of the source and of the 240p rendition begin at the same presentation times.
        var shared = Set<Double>()
        var source: [Double] = [], rendition: [Double] = []
        let by = Date().addingTimeInterval(20)
        while Date() < by && shared.count < 3 {
            Thread.sleep(forTimeInterval: 1)
            source = try Self.segmentStarts("\(base)/streams/cam/hls/", playlist: Self.get("\(base)/streams/cam/hls/index.m3u8"), dir: dir)
            rendition = try Self.segmentStarts("\(base)/streams/cam_240p/hls/", playlist: Self.get("\(base)/streams/cam_240p/hls/index.m3u8"), dir: dir)
            let rounded = Set(source.map { ($0 * 100).rounded() / 100 })
            shared = Set(rendition.map { ($0 * 100).rounded() / 100 }).intersection(rounded)
        }
        #expect(shared.count >= 3, "segment starts: source \(source), 240p \(rendition)")
        // Every 240p segment that overlaps the source's window starts where a source one does.
        if let lo = source.min(), let hi = source.max() {
            let inside = rendition.filter { $0 >= lo && $0 <= hi }.map { ($0 * 100).rounded() / 100 }
            #expect(Set(inside).isSubset(of: Set(source.map { ($0 * 100).rounded() / 100 })), "source \(source), 240p \(rendition)")
        }
        // ffprobe plays the multivariant playlist.
        let played = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0",
                                                              "\(base)/streams/cam/hls/master.m3u8"], timeout: 60)
        #expect(played.stdout.contains("640") && played.stdout.contains("426") && played.stdout.contains("320"), "\(played.output.prefix(300))")
    }

    /// A playlist's complete segments by media sequence number (their URIs), and its init
    /// segment's URI (fMP4).
    static func segmentsBySequence(_ playlist: String) -> (segments: [Int: String], initURI: String?) {
        var sequence = 0, initURI: String?
        var out: [Int: String] = [:]
        for line in playlist.split(separator: "\n").map(String.init) {
            if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") { sequence = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0 }
            if line.hasPrefix("#EXT-X-MAP:URI=\""), let uri = line.dropFirst("#EXT-X-MAP:URI=\"".count).split(separator: "\"").first { initURI = String(uri) }
            guard !line.hasPrefix("#"), !line.isEmpty else { continue }
            out[sequence] = line
            sequence += 1
        }
        return (out, initURI)
    }

    /// The presentation time of a segment's first video packet (an fMP4 one read after its
    /// init segment).
    static func firstPresentationTime(_ urls: [String], dir: URL) throws -> Double? {
        let file = dir.appendingPathComponent(UUID().uuidString).path
        _ = try ChildProcess.run("/bin/sh", ["-c", "for u in \(urls.map { "'\($0)'" }.joined(separator: " ")); do curl -s -m 10 \"$u\"; done > \(file)"], timeout: 25)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                                         "-read_intervals", "%+#1", "-of", "csv=p=0", file], timeout: 30)
        return r.stdout.split(separator: "\n").first.flatMap { Double($0.split(separator: ",").first ?? "") }
    }

    /// Two cameras, one in classic HLS and one in LL-HLS, each with two renditions started at
    /// different times, segments of 2 s over keyframes 1 s apart: a segment of a given media
    /// sequence number starts at the same presentation time in every variant (RFC 8216
    /// §6.2.4), which players and packagers switch by.
    @Test func variantsShareSequenceNumbersAndTimes() throws {
        let ladder = "renditions: [{name: r1, height: 120, bitrate: 150k}, {name: r2, height: 90, bitrate: 100k}]"
        let (serve, port, dir) = try Servers.serve("""
        streams:
          ts:
            source: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
            hls: {variant: mpegts, segment_duration: 2s}
            \(ladder)
          ll:
            source: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
            hls: {variant: lowLatency, segment_duration: 2s, part_duration: 200ms}
            \(ladder)
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)/streams"
        // The sources run from the start; a player asks for each first rendition 2 s later and
        // each second one 2.5 s after that (a rendition starts encoding when first asked for).
        Thread.sleep(forTimeInterval: 2)
        for cam in ["ts", "ll"] { _ = try Self.get("\(base)/\(cam)_r1/hls/index.m3u8") }
        Thread.sleep(forTimeInterval: 2.5)
        for cam in ["ts", "ll"] { _ = try Self.get("\(base)/\(cam)_r2/hls/index.m3u8") }
        // The playlists, until each camera's three list three sequence numbers in common.
        var lists: [String: (segments: [Int: String], initURI: String?)] = [:]
        func common(_ cam: String) -> [Int] {
            let sets = [cam, "\(cam)_r1", "\(cam)_r2"].map { Set(lists[$0]?.segments.keys ?? [:].keys) }
            return sets.dropFirst().reduce(sets[0]) { $0.intersection($1) }.sorted()
        }
        let by = Date().addingTimeInterval(25)
        repeat {
            Thread.sleep(forTimeInterval: 1)
            for v in ["ts", "ts_r1", "ts_r2", "ll", "ll_r1", "ll_r2"] {
                lists[v] = Self.segmentsBySequence(try Self.get("\(base)/\(v)/hls/index.m3u8"))
            }
        } while Date() < by && (common("ts").count < 3 || common("ll").count < 3)
        for cam in ["ts", "ll"] {
            #expect(common(cam).count >= 3, "\(cam): sequence numbers in every variant: \(lists.filter { $0.key.hasPrefix(cam) }.mapValues { $0.segments.keys.sorted() })")
            for n in common(cam).suffix(3) {
                let times = try [cam, "\(cam)_r1", "\(cam)_r2"].compactMap { v -> Double? in
                    guard let list = lists[v], let uri = list.segments[n] else { return nil }
                    let prefix = "\(base)/\(v)/hls/"
                    return try Self.firstPresentationTime((list.initURI.map { [prefix + $0] } ?? []) + [prefix + uri], dir: dir)
                }
                #expect(times.count == 3 && (times.max()! - times.min()!) < 0.002, "\(cam): segment \(n) starts at \(times)")
            }
        }
    }

    /// A camera with AAC sound (gst-rtsp-server's, as IP cameras send it): its rendition carries
    /// the sound as it is, interleaved with the re-encoded pictures, and the multivariant
    /// playlist says so for every variant (hls.js switches only between variants alike).
    /// A rendition nobody watched has stopped encoding; a player's first load of its playlist
    /// waits for the new pictures and gets a live edge, not the stale one it stopped at.
    @Test func aPlayerBackAtAStoppedRenditionGetsALiveEdgeNotAStaleOne() throws {
        let yaml = """
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30"
            preview: false
            hls: {variant: lowLatency, segment_duration: 1s, part_duration: 200ms}
            renditions: [{name: r240, height: 240, bitrate: 300k}]
        """
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let url = "http://127.0.0.1:\(port)/streams/cam_r240/hls/index.m3u8"
        func encoding() -> Bool? { Self.view("http://127.0.0.1:\(port)/api/streams/cam_r240")?.rendition?.encoding }
        /// Seconds between now and the newest program date-time the playlist lists.
        func edgeAge(_ playlist: String) -> Double? {
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let last = playlist.split(separator: "\n").last { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }
            return last.flatMap { f.date(from: String($0.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))) }.map { Date().timeIntervalSince($0) }
        }
        // Watched for a few seconds, then left until it stops (10 s idle).
        let first = try Self.get(url)
        #expect(edgeAge(first).map { $0 < 4 } == true, "first start: \(first)")
        Thread.sleep(forTimeInterval: 3)
        let end = Date().addingTimeInterval(25)
        while encoding() != false && Date() < end { Thread.sleep(forTimeInterval: 0.5) }
        #expect(encoding() == false, "the rendition stops when nobody watches")
        // Long enough that the edge it stopped at is older than the 4 s allowed below.
        Thread.sleep(forTimeInterval: 5)
        let asked = Date()
        let again = try Self.get(url)
        let waited = Date().timeIntervalSince(asked)
        let age = edgeAge(again)
        print("renditions: back after a stop, answered in \(String(format: "%.2f", waited)) s, edge \(age.map { String(format: "%.2f", $0) } ?? "–") s old")
        #expect(age.map { $0 < 4 } == true, "a stale edge: \(again)")
        #expect(waited < 5, "answered in \(waited) s")
        // The newest complete segment began after the request: a player's hold-back from the
        // edge lands among new pictures (before, it was the segment the rendition stopped in).
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var began: Date?, newestComplete: Date?
        for line in again.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") { began = f.date(from: String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))) }
            if !line.hasPrefix("#"), line.hasPrefix("seg") { newestComplete = began }
        }
        let lead = newestComplete.map { $0.timeIntervalSince(asked) }
        #expect(lead.map { $0 > -0.5 } == true, "the newest complete segment began \(lead.map { String(format: "%.2f", $0) } ?? "–") s after the request: \(again)")
    }

    @Test func aRenditionCarriesTheCamerasSound() throws {
        let camera = try Servers.RTSP(mounts: [Servers.RTSP.aacCameraMount])
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam:
            source: "\(camera.url("/av"))"
            transport: tcp
            open_timeout: 20s
            preview: false
            hls: {variant: mpegts, segment_duration: 1s}
            renditions: [{name: 90p, height: 90, bitrate: 100k}]
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)"
        // Asking for the ladder starts the rendition; its playlist fills within a few segments.
        var master = "", playlist = ""
        let until = Date().addingTimeInterval(30)
        while Date() < until {
            master = try Self.get("\(base)/streams/cam/hls/master.m3u8")
            playlist = try Self.get("\(base)/streams/cam_90p/hls/index.m3u8")
            if playlist.components(separatedBy: "#EXTINF").count > 3 { break }
            Thread.sleep(forTimeInterval: 1)
        }
        #expect(master.components(separatedBy: ",mp4a.40.2\"").count == 3, "both variants say AAC: \(master)")
        let segment = try #require(playlist.split(separator: "\n").last { !$0.hasPrefix("#") && !$0.isEmpty }, "\(playlist)")
        let file = dir.appendingPathComponent("r.ts").path
        _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-m", "10", "-o", file, "\(base)/streams/cam_90p/hls/\(segment)"], timeout: 15)
        // Both streams in the segment, each about the segment's length: interleaved, not one
        // ahead of the other.
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,height,duration", "-of", "csv=p=0", file], timeout: 30)
        let rows = probe.stdout.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let video = rows.first { $0.first == "h264" }, audio = rows.first { $0.first == "aac" }
        #expect(video?.dropFirst().first == "90", "\(probe.output)")
        let vd = Double(video?.last ?? "") ?? 0, ad = Double(audio?.last ?? "") ?? 0
        #expect(vd > 0.5 && ad > 0.5 && abs(vd - ad) < 0.4, "durations: video \(vd) s, audio \(ad) s: \(probe.output)")
        // The sound decodes: a tone, not silence.
        let decoded = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "info", "-nostats", "-i", file, "-map", "0:a", "-af", "volumedetect", "-f", "null", "-"], timeout: 30)
        #expect(decoded.status == 0 && decoded.stderr.contains("mean_volume:") && !decoded.stderr.contains("mean_volume: -inf"), "\(decoded.stderr.suffix(400))")
    }

    /// hls.js on the public page plays the ladder, goes down to a rendition when the link is
    /// throttled to 400 kbit/s (below the source, above the 240p rendition) (Chrome DevTools Protocol network emulation) and back up when
    /// the throttle is lifted.
    @Test func hlsjsSwitchesDownWhenThrottledAndBackUp() throws {
        let yaml = """
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30&bitrate=1500"
            preview: false
            hls: {variant: mpegts, segment_duration: 1s}
            renditions:
              - {name: 240p, height: 240, bitrate: 250k}
              - {name: 180p, height: 180, bitrate: 120k}
        """
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = """
        import json, time
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required"): o.add_argument(a)
        o.binary_location = "/usr/bin/chromium"
        d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
        out = {"heights": []}
        def js(s, *a): return d.execute_script(s, *a)
        def height(): return js("return window.hls && hls.currentLevel >= 0 && hls.levels[hls.currentLevel] ? hls.levels[hls.currentLevel].height : -1")
        def wait(cond, seconds):
            end = time.time() + seconds
            while time.time() < end:
                h = height()
                if not out["heights"] or out["heights"][-1] != h: out["heights"].append(h)
                if cond(h): return True
                time.sleep(0.25)
            return False
        try:
            # Once more if the first load fails (a full suite's busy machine): the failure is kept.
            try:
                d.get("http://127.0.0.1:\(port)/streams/cam/watch?via=hls")
            except Exception as e:
                out["first_load"] = repr(e)[:300]
                time.sleep(1)
                d.get("http://127.0.0.1:\(port)/streams/cam/watch?via=hls")
            out["levels_ok"] = wait(lambda h: js("return !!(window.hls && hls.levels && hls.levels.length === 3) && document.getElementById('video').currentTime > 1"), 30)
            out["levels"] = js("return window.hls ? hls.levels.map(l => [l.height, l.bitrate]) : []")
            out["top"] = wait(lambda h: h == 360, 30)
            d.execute_cdp_cmd("Network.enable", {})
            d.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 20, "downloadThroughput": 400000 / 8, "uploadThroughput": 400000 / 8})
            out["down"] = wait(lambda h: 0 < h <= 240, 45)
            d.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
            out["up"] = wait(lambda h: h == 360, 60)
            # Still playing after the switches: two more seconds of pictures.
            t_up = js("return document.getElementById('video').currentTime")
            out["playing"] = wait(lambda h: js("const v = document.getElementById('video'); return !v.paused && v.currentTime") > t_up + 2, 20)
        except Exception as e:
            out["error"] = repr(e)[:300]
        finally:
            print(json.dumps(out))
            d.quit()
        """
        let r = try ChildProcess.run(Servers.python, ["-c", script], timeout: 240)
        let line = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let j = try #require(try? Servers.decode(LadderResult.self, line), "\(r.stdout) \(r.stderr.suffix(1500))")
        // The line itself in the messages: it has the heights hls.js went through.
        print("renditions, hls.js: \(line)")
        #expect(j.levelsOk == true, "\(line)")
        #expect(j.top == true, "hls.js reached the source's 360p: \(line)")
        #expect(j.down == true, "hls.js went down under 400 kbit/s: \(line)")
        #expect(j.up == true, "hls.js came back up: \(line)")
        #expect(j.playing == true, "\(line)")
    }
}
