import Foundation

/// `liverelay bench wall`: what one watched tile of the ops wall costs the server, and on the
/// wire, by path, in one run: the same N camera streams watched, in turn, by N wall viewers
/// taking H.264 (sent as received), N wall viewers taking JPEG (decoded and encoded by the
/// preview), and N MJPEG viewers (the page before the wall). Viewers are browserless
/// (scripts/wall_client.py, curl) so that the figures are the server's alone.
public struct WallBenchmark {
    public var streams = 8
    public var seconds: Double = 10
    /// The camera: gst-rtsp-server, x264 at this bitrate (kbit/s), 640x360 at 30 fps.
    public var bitrate = 2000
    public var out = "./bench-results"

    public init() {}

    struct Row {
        let path: String
        let cpuPercent: Double
        let perTile: Double
        let kbitPerTile: Double
        let framesPerTile: Double
    }

    public func run() throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scripts = LatencyRun.scriptsDirectory(near: me)
        let camPort = LatencyRun.freePort()
        let mount = "/cam=( videotestsrc is-live=true pattern=snow ! video/x-raw,width=640,height=360,framerate=30/1 "
            + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=\(bitrate) ! rtph264pay name=pay0 pt=96 config-interval=1 )"
        let camera = try ChildProcess(name: "camera", "/usr/bin/python3", ["-u", scripts + "/rtsp_server.py", "--port", String(camPort), "--mount", mount])
        defer { camera.stop() }
        guard camera.waitFor("ready", timeout: 20) else { throw BenchError("the RTSP camera did not start: \(camera.stderr.suffix(300))") }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("wall-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var yaml = "streams:\n"
        for i in 0..<streams {
            yaml += "  c\(i):\n    source: rtsp://127.0.0.1:\(camPort)/cam\n    transport: tcp\n    preview: {fps: 30, size: 640x360}\n"
        }
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve.yaml"))
        defer { serve.stop() }
        Thread.sleep(forTimeInterval: 4)
        print("bench: \(streams) streams of a 640x360 30 fps camera at \(bitrate) kbit/s; \(Int(seconds)) s per path")

        func phase(_ name: String, viewers: () throws -> [ChildProcess], bytes: ([ChildProcess]) -> [(Int, Int)]) throws -> Row {
            let clients = try viewers()
            Thread.sleep(forTimeInterval: 3) // viewers connected, decoders started, first keyframes
            let cpu0 = serve.cpuSeconds, t0 = Date()
            Thread.sleep(forTimeInterval: seconds)
            let cpu = (serve.cpuSeconds - cpu0) / Date().timeIntervalSince(t0) * 100
            for c in clients { _ = c.wait(timeout: seconds + 30) }
            let got = bytes(clients)
            for c in clients { c.stop() }
            let n = Double(max(1, got.count))
            let kbit = got.map { Double($0.0) * 8 / 1000 / seconds }.reduce(0, +) / n
            let frames = got.map { Double($0.1) / seconds }.reduce(0, +) / n
            return Row(path: name, cpuPercent: cpu, perTile: 0, kbitPerTile: kbit, framesPerTile: frames)
        }
        let client = scripts + "/wall_client.py"
        func wall(_ decoders: String) throws -> [ChildProcess] {
            try (0..<streams).map { try ChildProcess(name: "viewer\($0)", "/usr/bin/python3", [client, String(port), "c\($0)", "--seconds", String(seconds + 3), "--decoders", decoders]) }
        }
        func wallBytes(_ cs: [ChildProcess]) -> [(Int, Int)] {
            cs.compactMap { c in
                guard let line = c.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                      let j = try? JSONDecoder().decode(WallClientLine.self, from: Data(line.utf8)) else { return nil }
                // The client's window includes the 3 s warm-up: scale to the measured seconds.
                let scale = seconds / (seconds + 3)
                return (Int(Double(j.bytes ?? 0) * scale), Int(Double(j.frames ?? 0) * scale))
            }
        }
        var rows: [Row] = []
        rows.append(try phase("no viewer (ingest only)", viewers: { [] }, bytes: { _ in [] }))
        rows.append(try phase("wall, H.264 as received (WebCodecs)", viewers: { try wall("avc1") }, bytes: wallBytes))
        rows.append(try phase("wall, JPEG (decode + encode)", viewers: { try wall("") }, bytes: wallBytes))
        rows.append(try phase("MJPEG preview (the page before the wall)", viewers: {
            try (0..<streams).map { try ChildProcess(name: "mjpeg\($0)", "/usr/bin/curl", ["-s", "-o", "/dev/null", "--max-time", String(Int(seconds) + 3), "-w", "%{size_download}",
                                                                                   "http://127.0.0.1:\(port)/streams/c\($0)/preview.mjpg"]) }
        }, bytes: { cs in cs.map { c in (Int(Double(Int(c.stdout.trimmingCharacters(in: .whitespaces)) ?? 0) * seconds / (seconds + 3)), 0) } }))
        let idle = rows[0].cpuPercent
        var md = "Ops wall cost per watched tile: \(streams) streams of one RTSP camera (640x360, 30 fps, x264 \(bitrate) kbit/s, snow), "
        md += "one viewer per stream, \(Int(seconds)) s per path, same `serve`, same run.\n\n"
        md += "| viewers | server CPU % | per tile, % of a core (above ingest only) | kbit/s per tile | pictures/s per tile |\n|---|---:|---:|---:|---:|\n"
        for (i, r) in rows.enumerated() {
            let per = i == 0 ? "–" : String(format: "%.2f", (r.cpuPercent - idle) / Double(streams))
            let kbit = i == 0 ? "–" : String(format: "%.0f", r.kbitPerTile)
            let fps = i == 0 || r.framesPerTile == 0 ? "–" : String(format: "%.1f", r.framesPerTile)
            md += String(format: "| %@ | %.1f | %@ | %@ | %@ |\n", r.path, r.cpuPercent, per, kbit, fps)
        }
        print(md)
        try md.write(to: URL(fileURLWithPath: out).appendingPathComponent("wall.md"), atomically: true, encoding: .utf8)
    }
}

/// scripts/wall_client.py's JSON line: what the viewer received.
struct WallClientLine: Decodable {
    var bytes: Int?
    var frames: Int?
}
