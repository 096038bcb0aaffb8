import Foundation

/// `liverelay bench webrtc`: WebRTC out (WHEP) against the other ways of watching the same
/// camera, in one run.
///
/// Latency: a camera (gst-rtsp-server serving LiveRelay's stamped test source) is pulled by
/// `serve`; capture → screen is read from the stamp in every picture Chromium shows, over WHEP
/// on the public page and in the ops wall's WebCodecs tile, and from every picture ffmpeg
/// decodes reading the camera directly. The three take turns, `rounds` times.
///
/// Cost: the server's CPU with no viewer, then with `viewers` WHEP viewers of one stream
/// (GStreamer's webrtcbin, which decrypts and drops: no decoding on the client's side), and the
/// drops the server counted for them.
public struct WebRTCBenchmark {
    public var rounds = 3
    public var seconds: Double = 8
    public var viewers = 20
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scripts = LatencyRun.scriptsDirectory(near: me)
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("webrtc-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        // The camera: the stamped source over UDP (MPEG-TS) into gst-rtsp-server.
        let camPort = LatencyRun.freePort(), udp = LatencyRun.freePort()
        let mount = "/cam=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 )"
        let camera = try ChildProcess(name: "camera", "/usr/bin/python3", ["-u", scripts + "/rtsp_server.py", "--port", String(camPort), "--mount", mount])
        defer { camera.stop() }
        guard camera.waitFor("ready", timeout: 20) else { throw BenchError("the RTSP camera did not start: \(camera.stderr.suffix(300))") }
        let duration = Int(Double(rounds) * 3 * (seconds + 12) + 120)
        let source = try ChildProcess(name: "source", me, ["publish", "udp://127.0.0.1:\(udp)", "--source", "testsrc://?size=640x360&fps=30&gop=30&bitrate=1500",
                                                           "--duration", String(duration)])
        defer { source.stop() }
        let cam = "rtsp://127.0.0.1:\(camPort)/cam"

        // WebRTC on the machine's global address too: webrtcbin (libnice) does not use loopback.
        let global = Self.globalAddress()
        var yaml = global.map { "auth:\n  anonymous: [read]\nserver:\n  webrtc: {listen: \"\($0):0\"}\n" } ?? ""
        yaml += "streams:\n  cam: {source: \"\(cam)\", transport: udp, preview: false}\n"
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve.yaml"))
        defer { serve.stop() }
        Thread.sleep(forTimeInterval: 4)
        print("bench: the stamped source (640x360, 30 fps, GOP 1 s) through gst-rtsp-server; \(rounds) rounds of \(Int(seconds)) s per reader")

        // Latency, in turns.
        var p50: [String: [Double]] = [:]
        func browser(_ url: String, _ mode: [String]) -> Double? {
            guard let r = try? ChildProcess.run("/usr/bin/python3", [scripts + "/browser.py", url] + mode + ["--seconds", String(seconds), "--timeout", "30"], timeout: seconds + 60),
                  let line = r.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                  let j = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            if let player = j["player"] as? String, player != "webrtc" { print("bench: the page played \(player), not WebRTC: \(j)") }
            return (j["p50"] as? Double) ?? (j["p50"] as? Int).map(Double.init)
        }
        func ffmpegDirect() throws -> Double? {
            let ff = try ChildProcess(name: "ffmpeg", "/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "udp", "-fflags", "nobuffer", "-flags", "low_delay",
                                                                        "-i", cam, "-f", "rawvideo", "-pix_fmt", "gray", "-"], rawStdout: true)
            defer { ff.stop() }
            let reader = StampReader(handle: ff.rawStdout!.fileHandleForReading, width: 640, height: 360)
            Thread.sleep(forTimeInterval: 2)
            reader.startRecording()
            Thread.sleep(forTimeInterval: seconds)
            reader.stopRecording()
            let lat = reader.all.map { Double($0.receivedMs - $0.captureMs) }.sorted()
            return lat.isEmpty ? nil : lat[lat.count / 2]
        }
        for round in 1...rounds {
            if let v = browser("http://127.0.0.1:\(port)/streams/cam/watch", ["--stamps", "video"]) { p50["WHEP in Chromium (public page)", default: []].append(v) }
            if let v = browser("http://127.0.0.1:\(port)/?only=cam&measure=cam", ["--stamps-tile", "cam", "--size", "1280x800"]) { p50["ops wall tile in Chromium (WebCodecs)", default: []].append(v) }
            if let v = try ffmpegDirect() { p50["ffmpeg reading the camera directly", default: []].append(v) }
            print("bench: round \(round): " + p50.keys.sorted().map { "\($0) \(p50[$0]!.last.map { String(format: "%.0f", $0) } ?? "-") ms" }.joined(separator: "; "))
        }

        // Cost per viewer.
        func cpu(during: Double) -> Double {
            let c0 = serve.cpuSeconds, t0 = Date()
            Thread.sleep(forTimeInterval: during)
            return (serve.cpuSeconds - c0) / Date().timeIntervalSince(t0) * 100
        }
        let idle = cpu(during: seconds)
        var perViewer: Double?, watching = 0, drops = "-"
        if global != nil {
            let clients = try (0..<viewers).map { i in
                try ChildProcess(name: "whep\(i)", "/usr/bin/python3", [scripts + "/whep_gst.py", "http://127.0.0.1:\(port)/streams/cam/whep",
                                                                        "--seconds", String(seconds + 12), "--no-decode"])
            }
            Thread.sleep(forTimeInterval: 8)
            let busy = cpu(during: seconds)
            let status = (try? ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 5).stdout) ?? ""
            let sinks = ((try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])?["sinks"] as? [[String: Any]] ?? [])
                .filter { $0["kind"] as? String == "webrtc" }
            watching = sinks.count
            let dropped = sinks.map { ($0["dropped"] as? [String: Int] ?? [:]).values.reduce(0, +) }.reduce(0, +)
            drops = String(dropped)
            for c in clients { _ = c.wait(timeout: 30); c.stop() }
            perViewer = watching > 0 ? (busy - idle) / Double(watching) : nil
        }

        var md = "WebRTC (WHEP) against the ops wall's tile and ffmpeg, one run: the stamped source (640x360, 30 fps, GOP 1 s) through gst-rtsp-server, "
        md += "pulled by `serve` over RTP/UDP; \(rounds) rounds of \(Int(seconds)) s per reader, taking turns.\n\n"
        md += "| reader | capture → screen p50 per round (ms) | median of rounds (ms) |\n|---|---|---:|\n"
        for k in p50.keys.sorted() {
            let v = p50[k]!.sorted()
            md += "| \(k) | \(p50[k]!.map { String(format: "%.0f", $0) }.joined(separator: ", ")) | \(String(format: "%.0f", v[v.count / 2])) |\n"
        }
        md += "\nServer CPU with no viewer: \(String(format: "%.1f", idle)) % of a core. "
        if let perViewer {
            md += "With \(watching) WHEP viewers (GStreamer webrtcbin, no decoding): \(String(format: "%.2f", perViewer)) % of a core per viewer above that; \(drops) packets dropped by the server for them.\n"
        } else {
            md += "No WHEP viewers measured (webrtcbin needs a global IPv4 address).\n"
        }
        print(md)
        try md.write(to: URL(fileURLWithPath: out).appendingPathComponent("webrtc.md"), atomically: true, encoding: .utf8)
    }

    /// This machine's first global IPv4 address (libnice, under webrtcbin, leaves loopback out
    /// of its candidates and cannot reach a server there).
    public static func globalAddress() -> String? {
        let r = try? ChildProcess.run("/usr/sbin/ip", ["-4", "-o", "addr", "show", "scope", "global"], timeout: 5)
        return r?.stdout.split(separator: "\n").compactMap { line -> String? in
            let f = line.split(separator: " ")
            guard let i = f.firstIndex(of: "inet"), i + 1 < f.count else { return nil }
            return f[i + 1].split(separator: "/").first.map(String.init)
        }.first
    }
}
