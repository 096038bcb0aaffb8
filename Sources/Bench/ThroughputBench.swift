import MediaCore
import Foundation
import Relay
import RelayAPI

/// `liverelay bench throughput`: N streams at once from a looped file in real time, remuxed to
/// HLS (and decoded for a preview), next to N `ffmpeg -c copy -f hls` processes on the same
/// input in the same run. CPU and memory per stream.
public struct ThroughputBenchmark {

    /// Stream counts to sweep (comma-separated).
    public var streams = "1,8,32,64"

    /// Seconds measured per point.
    public var seconds: Double = 20

    /// The input (default: a 640x360 30 fps H.264 clip made with ffmpeg's testsrc2).
    public var file: String?

    /// Also measure decode + preview (MJPEG at 15 fps) per stream.
    public var decode = false

    /// Runs per remux point (the table shows the median; the notes every ratio).
    public var repeats = 1

    /// Where the remux rows' streams come from: file (the input looped in real time, `-re` for ffmpeg), rtmp (N publishers of the input into nginx-rtmp, pulled by both), or both.
    public var sources = "file,rtmp"

    /// Where results go.
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        FFmpegLog.silence()
        let counts = streams.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 && $0 <= 512 }) else { throw BenchError("--streams: expected counts such as 1,8,32") }
        guard (1...20).contains(repeats) else { throw BenchError("--repeats: expected 1 to 20") }
        let kinds = sources.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !kinds.isEmpty, kinds.allSatisfy({ ["file", "rtmp", "push"].contains($0) }) else { throw BenchError("--sources: expected file, rtmp, push or a list of them") }
        let outDir = URL(fileURLWithPath: out, isDirectory: true)
        let work = outDir.appendingPathComponent("throughput-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var input = file ?? outDir.appendingPathComponent("testsrc2-360p.mp4").path
        if file == nil && !FileManager.default.fileExists(atPath: input) {
            let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "30",
                                                      "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-b:v", "1000k", "-pix_fmt", "yuv420p", input])
            guard r.status == 0 else { throw BenchError("ffmpeg could not make \(input): \(r.stderr)") }
        }
        input = URL(fileURLWithPath: input).standardizedFileURL.path
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var md = "Throughput: N streams of \(URL(fileURLWithPath: input).lastPathComponent) in real time (looped), \(Int(seconds)) s per point, \(ProcessInfo.processInfo.activeProcessorCount) cores.\n\n"
        let fps = Self.frameRate(of: input)
        md += "Speed: pictures taken per stream per second over the input's \(String(format: "%.0f", fps)) fps (1.00 = keeping up; below it, the machine is saturated and the streams fall behind — a paced file source waits instead of dropping).\n\n"
        md += "CPU: the scheduler's run time of every thread over the window (/proc/PID/task/*/schedstat, nanoseconds). The remux rows run LiveRelay and the N ffmpeg processes at the same time, measured over the same window\(repeats > 1 ? ", \(repeats) runs per point (median shown)" : "").\n\n"
        var notes: [String] = []
        var rtmp: RTMPServer?
        if kinds.contains("rtmp") || kinds.contains("push") {
            if RTMPServer.isInstalled {
                rtmp = try RTMPServer(work: work)
            } else {
                notes.append("RTMP rows skipped: nginx with libnginx-mod-rtmp is not installed (scripts/setup.sh installs it).")
            }
        }
        defer { rtmp?.process.stop() }
        if kinds.contains("file") {
            md += "\nfile rows: each stream reads the file itself, paced by its timestamps (`realtime: true`; ffmpeg `-re`). A LiveRelay file stream whose only consumers are woken at keyframes (here: classic HLS) releases a keyframe interval's packets together when the keyframe comes due; ffmpeg `-re` checks every 10 ms.\n"
        }
        if rtmp != nil {
            md += "\nrtmp rows: N `ffmpeg -re -c copy -f flv` publishers push the file into nginx-rtmp; LiveRelay and N `ffmpeg -i rtmp://… -c copy -f hls` pull the same N streams over the same window (the publishers and nginx are not counted). Packets arrive one by one from the network: every relay wakes per packet.\n"
        }
        if rtmp != nil && kinds.contains("push") {
            md += "\npush rows: N `ffmpeg -re -c copy -f flv` publishers push the file to LiveRelay's one-port RTMP ingest (`source: publish`, HLS out), and N more push it into nginx-rtmp, pulled by N `ffmpeg -i rtmp://… -c copy -f hls`: the peer column counts nginx and the N ffmpeg processes (the publishers are not counted).\n"
        }
        md += "\n| streams | path | CPU % total | CPU % per stream | RSS MiB total | RSS MiB per stream | LiveRelay / ffmpeg CPU per stream | drops | speed |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
        print(md, terminator: "")
        var published = 0
        for n in counts {
            var rows: [String] = []
            for kind in kinds where kind == "file" || rtmp != nil {
                if kind == "push", let rtmp {
                    let (ours, theirs) = try measurePush(me: me, input: input, n: n, rtmp: rtmp, first: published, work: work, fps: fps)
                    published += n
                    let ratio = theirs.cpu > 0 ? ours.cpu / theirs.cpu : 0
                    rows += [
                        "| \(n) | LiveRelay one-port RTMP ingest → HLS (one process, N publishers) | \(f(ours.cpu)) | \(f(ours.cpu / Double(n))) | \(f(ours.rss)) | \(f(ours.rss / Double(n))) | \(String(format: "%.2f", ratio)) | \(ours.drops) | \(String(format: "%.2f", ours.speed)) |",
                        "| \(n) | nginx-rtmp + ffmpeg -i rtmp:// -c copy -f hls (\(n) processes, same window) | \(f(theirs.cpu)) | \(f(theirs.cpu / Double(n))) | \(f(theirs.rss)) | \(f(theirs.rss / Double(n))) | | | |",
                    ]
                    continue
                }
                // LiveRelay (one process, N streams, remux to HLS in memory) and ffmpeg (N
                // processes, `-c copy -f hls`) run at the same time and are measured over the
                // same window: whatever else the machine does weighs on both alike.
                var runs: [(ratio: Double, ours: Measure, theirs: (cpu: Double, rss: Double))] = []
                for _ in 0..<repeats {
                    var publishers: [ChildProcess] = []
                    defer { for p in publishers { p.stop() } }
                    var inputs = Array(repeating: input, count: n)
                    if kind == "rtmp", let rtmp {
                        inputs = (0..<n).map { i in "rtmp://127.0.0.1:\(rtmp.port)/live/t\(published + i)" }
                        published += n
                        publishers = try rtmp.publish(input, to: inputs)
                    }
                    let (ours, theirs) = try measureRemuxSideBySide(me: me, inputs: inputs, realtime: kind == "file", work: work, fps: fps)
                    runs.append((theirs.cpu > 0 ? ours.cpu / theirs.cpu : 0, ours, theirs))
                }
                runs.sort { $0.ratio < $1.ratio }
                let (ratio, ours, theirs) = runs[runs.count / 2]
                if repeats > 1 {
                    notes.append("\(n) streams from \(kind): LiveRelay / ffmpeg CPU per stream over \(repeats) runs: \(runs.map { String(format: "%.2f", $0.ratio) }.joined(separator: ", ")) (the row shows the median run)")
                }
                let from = kind == "file" ? "file" : "RTMP"
                rows += [
                    "| \(n) | LiveRelay remux → HLS, from \(from) (one process) | \(f(ours.cpu)) | \(f(ours.cpu / Double(n))) | \(f(ours.rss)) | \(f(ours.rss / Double(n))) | \(String(format: "%.2f", ratio)) | \(ours.drops) | \(String(format: "%.2f", ours.speed)) |",
                    "| \(n) | ffmpeg \(kind == "file" ? "-re " : "-i rtmp:// ")-c copy -f hls (\(n) processes, same window) | \(f(theirs.cpu)) | \(f(theirs.cpu / Double(n))) | \(f(theirs.rss)) | \(f(theirs.rss / Double(n))) | | | |",
                ]
            }
            if decode {
                let d = try measureLiveRelay(me: me, input: input, n: n, decode: true, work: work, fps: fps)
                rows.append("| \(n) | LiveRelay decode + preview 15 fps (one viewer each) + HLS | \(f(d.cpu)) | \(f(d.cpu / Double(n))) | \(f(d.rss)) | \(f(d.rss / Double(n))) | | \(d.drops) | \(String(format: "%.2f", d.speed)) |")
                let idle = try measureLiveRelay(me: me, input: input, n: n, decode: true, viewers: false, work: work, fps: fps)
                rows.append("| \(n) | LiveRelay decode + preview, nobody watching (no JPEG) + HLS | \(f(idle.cpu)) | \(f(idle.cpu / Double(n))) | \(f(idle.rss)) | \(f(idle.rss / Double(n))) | | \(idle.drops) | \(String(format: "%.2f", idle.speed)) |")
            }
            for r in rows { print(r); md += r + "\n" }
        }
        if !notes.isEmpty {
            let text = "\n" + notes.map { "- \($0)" }.joined(separator: "\n") + "\n"
            print(text, terminator: "")
            md += text
        }
        try md.write(to: outDir.appendingPathComponent("throughput.md"), atomically: true, encoding: .utf8)
        print("\nwritten: \(outDir.path)/throughput.md")
    }

    func f(_ v: Double) -> String { v < 10 ? String(format: "%.2f", v) : String(format: "%.0f", v) }

    /// The input's video frame rate (ffprobe), 30 when it cannot tell.
    static func frameRate(of input: String) -> Double {
        guard let r = try? ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=avg_frame_rate", "-of", "csv=p=0", input]),
              r.status == 0 else { return 30 }
        let parts = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").compactMap { Double($0) }
        guard let num = parts.first, num > 0 else { return 30 }
        return parts.count > 1 && parts[1] > 0 ? num / parts[1] : num
    }

    /// Per stream: packets the HLS sink and frames the preview sink received so far.
    func sinkCounts(port: Int) -> (hls: Int, preview: Int, drops: Int, previewDrops: Int) {
        guard let data = ChildProcess.httpBody("http://127.0.0.1:\(port)/api/streams"),
              let list = try? RelayAPI.decode([StreamView].self, from: data) else { return (0, 0, 0, 0) }
        var hls = 0, preview = 0, drops = 0, previewDrops = 0
        for s in list {
            for sink in s.sinks {
                let received = sink.counters.received
                switch sink.kind {
                case .hls:
                    hls += received
                    drops += sink.counters.droppedTotal
                case .preview:
                    preview += received
                    previewDrops += sink.counters.droppedTotal
                default: break
                }
            }
        }
        return (hls, preview, drops, previewDrops)
    }

    typealias Measure = (cpu: Double, rss: Double, drops: String, speed: Double)

    /// `serve` with N streams of the looped input (and, with `decode`, one MJPEG viewer per
    /// stream when `watch`: the preview only encodes while someone watches).
    func startLiveRelay(me: String, inputs: [String], realtime: Bool = true, decode: Bool, watch: Bool, work: URL) throws -> (serve: ChildProcess, port: Int, viewers: [ChildProcess]) {
        let n = inputs.count
        var yaml = "streams:\n"
        for (i, input) in inputs.enumerated() {
            yaml += "  s\(i):\n    source: \(input)\n" + (realtime ? "    realtime: true\n    loop: true\n" : "")
            yaml += decode ? "    preview: { fps: 15, size: 320x180 }\n" : "    preview: false\n"
            yaml += "    hls: { variant: mpegts, segment_duration: 2s }\n"
        }
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve-\(n).yaml"))
        var viewers: [ChildProcess] = []
        if decode && watch {
            for i in 0..<n {
                viewers.append(try ChildProcess(name: "viewer-\(i)", "/usr/bin/curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/streams/s\(i)/preview.mjpg"]))
            }
        }
        return (serve, port, viewers)
    }

    /// Measures `serve` (and any peers) over one window after a 3 s warm-up.
    func measureWindow(serve: ChildProcess, port: Int, n: Int, decode: Bool, fps: Double, peers: [ChildProcess] = []) -> (ours: Measure, peers: (cpu: Double, rss: Double)) {
        Thread.sleep(forTimeInterval: 3)
        let c0 = serve.cpuSeconds, p0 = peers.map(\.cpuSeconds), t0 = Date(), k0 = sinkCounts(port: port)
        Thread.sleep(forTimeInterval: seconds)
        let c1 = serve.cpuSeconds, p1 = peers.map(\.cpuSeconds)
        let wall = Date().timeIntervalSince(t0)
        let cpu = (c1 - c0) / wall * 100
        let peerCPU = zip(p1, p0).map { $0 - $1 }.reduce(0, +) / wall * 100
        let k1 = sinkCounts(port: port)
        // Decoded pictures when there is a preview, else packets (the test clip is video only).
        let taken = decode ? k1.preview - k0.preview : k1.hls - k0.hls
        let speed = Double(taken) / (fps * wall * Double(n))
        // Over the measured window: HLS drops; with a preview, also the frames its newest-only
        // queue skipped (JPEG encodes not done because the encoder was behind).
        let hlsDrops = k1.drops - k0.drops
        let drops = decode ? "\(hlsDrops) HLS, \(k1.previewDrops - k0.previewDrops) preview" : "\(hlsDrops)"
        return ((cpu, serve.rssMiB, drops, speed), (peerCPU, peers.map(\.rssMiB).reduce(0, +)))
    }

    func measureLiveRelay(me: String, input: String, n: Int, decode: Bool, viewers watch: Bool = true, work: URL, fps: Double) throws -> Measure {
        let (serve, port, viewers) = try startLiveRelay(me: me, inputs: Array(repeating: input, count: n), decode: decode, watch: watch, work: work)
        defer { for v in viewers { v.stop() }; serve.stop() }
        return measureWindow(serve: serve, port: port, n: n, decode: decode, fps: fps).ours
    }

    /// LiveRelay remuxing N streams and N ffmpeg processes doing the same, at the same time:
    /// files looped in real time, or live URLs.
    func measureRemuxSideBySide(me: String, inputs: [String], realtime: Bool, work: URL, fps: Double) throws -> (ours: Measure, theirs: (cpu: Double, rss: Double)) {
        let (serve, port, _) = try startLiveRelay(me: me, inputs: inputs, realtime: realtime, decode: false, watch: false, work: work)
        defer { serve.stop() }
        let procs = try startFFmpeg(inputs: inputs, realtime: realtime, work: work)
        defer { for p in procs { p.stop() } }
        // Network readers probe their input first: give them time before the window.
        if !realtime { Thread.sleep(forTimeInterval: 2) }
        let m = measureWindow(serve: serve, port: port, n: inputs.count, decode: false, fps: fps, peers: procs)
        return (m.ours, m.peers)
    }

    /// N publishers into LiveRelay's one-port ingest and N into nginx-rtmp (pulled by N ffmpeg
    /// HLS remuxers), measured over the same window.
    func measurePush(me: String, input: String, n: Int, rtmp: RTMPServer, first: Int, work: URL, fps: Double) throws -> (ours: Measure, theirs: (cpu: Double, rss: Double)) {
        let ingestPort = LatencyRun.freePort()
        var yaml = "ingest:\n  rtmp: {listen: \"127.0.0.1:\(ingestPort)\"}\nstreams:\n"
        for i in 0..<n { yaml += "  s\(i): {source: publish, preview: false, hls: {variant: mpegts, segment_duration: 2s}}\n" }
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve-push-\(n).yaml"), ready: "RTMP ingest listening")
        defer { serve.stop() }
        let ours = try rtmp.publish(input, to: (0..<n).map { "rtmp://127.0.0.1:\(ingestPort)/live/s\($0)" })
        defer { for p in ours { p.stop() } }
        let names = (0..<n).map { "rtmp://127.0.0.1:\(rtmp.port)/live/push\(first + $0)" }
        let theirs = try rtmp.publish(input, to: names)
        defer { for p in theirs { p.stop() } }
        let pulls = try startFFmpeg(inputs: names, realtime: false, work: work)
        defer { for p in pulls { p.stop() } }
        Thread.sleep(forTimeInterval: 2)
        let m = measureWindow(serve: serve, port: port, n: n, decode: false, fps: fps, peers: pulls + [rtmp.process])
        return (m.ours, m.peers)
    }

    func startFFmpeg(inputs: [String], realtime: Bool, work: URL) throws -> [ChildProcess] {
        var procs: [ChildProcess] = []
        for (i, input) in inputs.enumerated() {
            let dir = work.appendingPathComponent("ffmpeg-\(inputs.count)-\(i)")
            try? FileManager.default.removeItem(at: dir)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            do {
                procs.append(try ChildProcess(name: "ffmpeg-\(i)", "/usr/bin/ffmpeg", ["-v", "error"] + (realtime ? ["-re", "-stream_loop", "-1"] : []) + ["-i", input, "-c", "copy", "-f", "hls",
                                                                               "-hls_time", "2", "-hls_list_size", "7", "-hls_flags", "delete_segments",
                                                                               dir.appendingPathComponent("index.m3u8").path]))
            } catch {
                for p in procs { p.stop() }
                throw error
            }
        }
        return procs
    }
}

/// nginx-rtmp on a free port (the latency bench's RTMP source and HLS peer; the throughput
/// bench's RTMP rows: N publishers push, both relays pull). Runs until its process is stopped.
struct RTMPServer {
    let process: ChildProcess
    let port: Int

    static var isInstalled: Bool {
        FileManager.default.fileExists(atPath: "/usr/sbin/nginx") && FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_rtmp_module.so")
    }

    /// `application`: more directives for the `live` application (nginx-rtmp's HLS, say).
    /// `launch` starts a process (name, executable, arguments): the latency bench's runs it in
    /// the source's network namespace and stops it with the rest of its processes.
    init(work: URL, loopbackOnly: Bool = true, application: String = "",
         launch: (String, String, [String]) throws -> ChildProcess = { try ChildProcess(name: $0, $1, $2) }) throws {
        port = LatencyRun.freePort()
        let dir = work.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("logs"), withIntermediateDirectories: true)
        let conf = """
        load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
        daemon off; master_process off;
        pid \(dir.path)/nginx.pid; error_log \(dir.path)/logs/error.log;
        events { worker_connections 1024; }
        rtmp { server { listen \(loopbackOnly ? "127.0.0.1:" : "")\(port); chunk_size 4096; application live { live on; \(application) } } }
        """
        try conf.write(to: dir.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        process = try launch("nginx", "/usr/sbin/nginx", ["-c", dir.appendingPathComponent("nginx.conf").path, "-p", dir.path])
        usleep(500_000)
        guard process.process.isRunning else { throw BenchError("nginx-rtmp did not start: \(process.stderr.suffix(300))") }
    }

    /// One `ffmpeg -re` publisher of the looped file per URL; returns once they are all on air.
    func publish(_ file: String, to urls: [String]) throws -> [ChildProcess] {
        var procs: [ChildProcess] = []
        do {
            for (i, url) in urls.enumerated() {
                procs.append(try ChildProcess(name: "publisher-\(i)", "/usr/bin/ffmpeg", ["-v", "error", "-re", "-stream_loop", "-1", "-i", file, "-c", "copy", "-f", "flv", url]))
            }
        } catch {
            for p in procs { p.stop() }
            throw error
        }
        Thread.sleep(forTimeInterval: 2)
        if let dead = procs.first(where: { !$0.process.isRunning }) {
            for p in procs { p.stop() }
            throw BenchError("an RTMP publisher stopped: \(dead.stderr.suffix(300))")
        }
        return procs
    }
}

extension ThroughputBenchmark {
    /// The measuring helpers alone, with this window (the ingest bench uses them).
    static func window(seconds: Double) -> ThroughputBenchmark {
        var b = ThroughputBenchmark()
        b.seconds = seconds
        return b
    }
}
