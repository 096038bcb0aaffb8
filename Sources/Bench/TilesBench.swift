import Foundation

/// `liverelay bench tiles`: the ops wall in headless Chromium at N tiles of cameras that send a
/// 640x360 main and a 320x180 sub stream at 30 fps, each tile count played two ways in turn:
/// with `substream` (the tiles play the sub stream) and overloaded on purpose (no sub stream:
/// every tile decodes the full picture). The stamped camera's tile is read from its canvas
/// (every picture painted), against ffmpeg's direct read of the stream it plays, in the same
/// run. Then the selected tile's switch from the sub to the main stream.
public struct TilesBenchmark {
    public var tiles = [16, 36]
    public var seconds: Double = 12
    public var out = "./bench-results"

    public init() {}

    struct Row {
        var tiles: Int
        var mode: String
        var floorP50: Double?
        var p50: Double?
        var p95: Double?
        /// Distinct camera pictures painted in the window, of those the camera made.
        var shownPercent: Double
        var behind: Int
        var dropping: String
        var serverDrops: [String: Int]
        var waitReceiveP95: Double?
        var waitDecodeP95: Double?
        var serveCPU: Double
    }

    public func run() throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scripts = LatencyRun.scriptsDirectory(near: me)
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("tiles-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        // The camera: gst-rtsp-server serving /main and /sub, each LiveRelay's stamped source
        // (one clock) sent to it as MPEG-TS over UDP.
        let camPort = LatencyRun.freePort(), mainUDP = LatencyRun.freePort(udp: true), subUDP = LatencyRun.freePort(udp: true)
        func mount(_ path: String, _ udp: Int) -> String {
            "/\(path)=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=0 )"
        }
        let camera = try ChildProcess(name: "camera", "/usr/bin/python3", ["-u", scripts + "/rtsp_server.py", "--port", String(camPort),
                                                                           "--mount", mount("main", mainUDP), "--mount", mount("sub", subUDP)])
        defer { camera.stop() }
        guard camera.waitFor("ready", timeout: 20) else { throw BenchError("the RTSP camera did not start: \(camera.stderr.suffix(300))") }
        let sources = try [(mainUDP, "640x360", 1000), (subUDP, "320x180", 300)].map { udp, size, kbit in
            try ChildProcess(name: "source-\(size)", me, ["publish", "udp://127.0.0.1:\(udp)", "--source", "testsrc://?size=\(size)&fps=30&gop=30&bitrate=\(kbit)",
                                                           "--duration", "100000"])
        }
        defer { for s in sources { s.stop() } }
        let main = "rtsp://127.0.0.1:\(camPort)/main", sub = "rtsp://127.0.0.1:\(camPort)/sub"
        print("bench: cameras of 640x360 + 320x180 at 30 fps (GOP 1 s); walls of \(tiles.map(String.init).joined(separator: ", ")) tiles in Chromium 1700x1300, \(Int(seconds)) s each")

        var rows: [Row] = []
        var switchLine = ""
        for n in tiles {
            for withSub in [true, false] {
                var yaml = "streams:\n"
                for i in 0..<n {
                    yaml += "  \(i == 0 ? "cam" : String(format: "w%02d", i)):\n    source: \(main)\n    transport: udp\n    preview: false\n"
                    if withSub { yaml += "    substream: {source: \"\(sub)\", transport: udp}\n" }
                }
                let dir = work.appendingPathComponent("\(n)-\(withSub)")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: dir.appendingPathComponent("serve.yaml"))
                defer { serve.stop() }
                Thread.sleep(forTimeInterval: 3)
                rows.append(try measure(n, withSub: withSub, port: port, serve: serve, floorURL: withSub ? sub : main, scripts: scripts, dir: dir))
                print(Self.describe(rows.last!))
                if withSub && n == tiles.first {
                    switchLine = try measureSwitch(port: port, scripts: scripts)
                    print(switchLine)
                }
            }
        }
        var md = "The ops wall at N tiles, headless Chromium 1700x1300 (software decoding), cameras of 640x360 main + 320x180 sub at 30 fps, "
        md += "\(Int(seconds)) s per row. Capture → screen of the stamped camera's tile (every picture painted, read from its canvas) against "
        md += "ffmpeg's direct read of the stream it plays (RTSP/UDP, nobuffer), side by side in the same run.\n\n"
        md += "| tiles | tiles play | ffmpeg direct p50 (ms) | tile p50 (ms) | tile p95 (ms) | p95 − direct p50 | pictures shown | page fell behind | says dropping | server drops | page waits p95: receive / decode (ms) | serve CPU % |\n"
        md += "|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|\n"
        for r in rows {
            let drops = r.serverDrops.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            md += "| \(r.tiles) | \(r.mode) | \(Self.ms(r.floorP50)) | \(Self.ms(r.p50)) | \(Self.ms(r.p95)) | \(r.p95.flatMap { p in r.floorP50.map { Self.ms(p - $0) } } ?? "–") "
            md += "| \(String(format: "%.0f %%", r.shownPercent)) | \(r.behind) | \(r.dropping.isEmpty ? "no" : "yes (\(r.dropping))") | \(drops.isEmpty ? "none" : drops) "
            md += "| \(Self.ms(r.waitReceiveP95)) / \(Self.ms(r.waitDecodeP95)) | \(String(format: "%.0f", r.serveCPU)) |\n"
        }
        md += "\n" + switchLine + "\n"
        print(md)
        try md.write(to: URL(fileURLWithPath: out).appendingPathComponent("tiles.md"), atomically: true, encoding: .utf8)
    }

    static func ms(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "–" }

    static func describe(_ r: Row) -> String {
        "bench: \(r.tiles) tiles, \(r.mode): direct \(ms(r.floorP50)) ms, tile p50 \(ms(r.p50)) p95 \(ms(r.p95)) ms, "
            + "\(String(format: "%.0f", r.shownPercent)) % shown, behind \(r.behind), dropping '\(r.dropping)'"
    }

    /// One wall: Chromium on the wall (the stamped tile measured) beside ffmpeg reading what the
    /// tile plays straight from the camera; both over the same window.
    func measure(_ n: Int, withSub: Bool, port: Int, serve: ChildProcess, floorURL: String, scripts: String, dir: URL) throws -> Row {
        let warmup = 6.0
        let csv = dir.appendingPathComponent("tile.csv")
        let browser = try ChildProcess(name: "browser", "/usr/bin/python3", [scripts + "/browser.py", "http://127.0.0.1:\(port)/?measure=cam",
                                                                             "--stamps-tile", "cam", "--wall", "--seconds", String(warmup + seconds),
                                                                             "--csv", csv.path, "--size", "1700x1300", "--timeout", "30"])
        defer { browser.stop() }
        let (w, h) = withSub ? (320, 180) : (640, 360)
        let reader = try ChildProcess(name: "direct", "/usr/bin/ffmpeg", ["-v", "error", "-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "32768",
                                                                         "-analyzeduration", "0", "-rtsp_transport", "udp", "-i", floorURL,
                                                                         "-an", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(w)x\(h)", "-"], rawStdout: true)
        defer { reader.stop() }
        let stamps = StampReader(handle: reader.rawStdout!.fileHandleForReading, width: w, height: h)
        Thread.sleep(forTimeInterval: warmup)
        let window0 = Int64(Date().timeIntervalSince1970 * 1000)
        let cpu0 = serve.cpuSeconds, t0 = Date()
        stamps.startRecording()
        Thread.sleep(forTimeInterval: seconds)
        stamps.stopRecording()
        let cpu = (serve.cpuSeconds - cpu0) / Date().timeIntervalSince(t0) * 100
        let window1 = Int64(Date().timeIntervalSince1970 * 1000)
        // The browser reports after its --wall watch (as long again): its CSV covers the window.
        _ = browser.wait(timeout: warmup + seconds * 2 + 60)
        let rowsCSV = ((try? String(contentsOf: csv, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst().compactMap { line -> (UInt32, Double)? in
            let c = line.split(separator: ",")
            guard c.count == 4, let f = UInt32(c[0]), let capture = Double(c[1]), let painted = Double(c[2]),
                  painted >= Double(window0), painted <= Double(window1) else { return nil }
            return (f, painted - capture)
        }
        let lat = rowsCSV.map(\.1).sorted()
        let floor = stamps.all.map { Double($0.receivedMs - $0.captureMs) }.sorted()
        func pct(_ l: [Double], _ p: Double) -> Double? { l.isEmpty ? nil : l[min(l.count - 1, Int(Double(l.count) * p))] }
        let tile = (try? BrowserReport.decode(browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""))?.wall?.tiles?["cam"]
        let made = Double(window1 - window0) / 1000 * 30
        return Row(tiles: n, mode: withSub ? "the sub stream" : "the main stream (overloaded, no sub)", floorP50: pct(floor, 0.5), p50: pct(lat, 0.5), p95: pct(lat, 0.95),
                   shownPercent: Double(Set(rowsCSV.map(\.0)).count) / made * 100, behind: tile?.behind ?? 0, dropping: tile?.dropping ?? "",
                   serverDrops: tile?.serverDrops ?? [:], waitReceiveP95: tile?.waitReceiveP95, waitDecodeP95: tile?.waitDecodeP95, serveCPU: cpu)
    }

    /// The stamped tile selected (key 1): when its first main-stream picture is painted after the
    /// key, the gap after the last sub-stream picture, and pictures painted without a stamp.
    func measureSwitch(port: Int, scripts: String) throws -> String {
        let steps = "sleep:4;eval:Date.now();key:1;sleep:3;eval:JSON.stringify(wall.tiles.cam.stampLog);eval:wall.tiles.cam.unstamped || 0"
        let r = try ChildProcess.run("/usr/bin/python3", [scripts + "/browser.py", "http://127.0.0.1:\(port)/?measure=cam", "--steps", steps,
                                                          "--keys-after", "1", "--seconds", "1", "--size", "1700x1300"], timeout: 90)
        struct Report: Decodable { var evals: [Evaluated] }
        enum Evaluated: Decodable {
            case number(Double), text(String)
            init(from d: any Decoder) throws {
                let c = try d.singleValueContainer()
                if let n = try? c.decode(Double.self) { self = .number(n) } else { self = .text(try c.decode(String.self)) }
            }
        }
        guard let line = r.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let report = try? JSONDecoder().decode(Report.self, from: Data(line.utf8)), report.evals.count == 3,
              case .number(let pressed) = report.evals[0], case .text(let logText) = report.evals[1], case .number(let unstamped) = report.evals[2],
              let log = try? JSONDecoder().decode([[Double]].self, from: Data(logText.utf8)) else {
            return "Switch to the main stream: not measured (\(r.stderr.suffix(200)))"
        }
        guard let firstMain = log.first(where: { $0.count == 4 && $0[3] == 640 && $0[2] >= pressed }),
              let lastSub = log.last(where: { $0.count == 4 && $0[3] == 320 && $0[2] <= firstMain[2] }) else {
            return "Switch to the main stream: no main-stream picture within 3 s of the key"
        }
        return String(format: "Switch to the main stream (the stamped tile selected, key 1, at %d tiles): first main picture %.0f ms after the key (GOP 1,000 ms), "
                      + "%.0f ms after the last sub picture; %.0f pictures painted without a stamp.", tiles.first ?? 0, firstMain[2] - pressed, firstMain[2] - lastSub[2], unstamped)
    }
}
