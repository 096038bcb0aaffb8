import ArgumentParser
import MediaCore
import Foundation
import Synchronization

/// `liverelay bench latency`: the stamped test source through LiveRelay's paths and through
/// peers (the ffmpeg CLI, nginx-rtmp), all read by the same kind of client in one run: each
/// reader's pictures carry their capture time, read back from the pixels.
struct LatencyBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Capture → picture latency of LiveRelay's paths next to peers, in one run.",
        discussion: """
        Starts a stamped RTSP camera (gst-rtsp-server fed by the test source), nginx-rtmp with a \
        pushed stamped stream, `liverelay serve` on both, and readers (ffmpeg decoding to raw \
        pixels; the bench reads the stamp of every picture). Writes results.md, one CSV per \
        scenario and latency-cdf.svg / latency-time.svg to --out.
        """
    )

    @Flag(help: "A small set of scenarios, run side by side, in under a minute.")
    var quick = false

    @Option(help: "Seconds each scenario is measured.")
    var seconds: Double = 20

    @Option(help: "Picture size of the test source.")
    var size = "640x360"

    @Option(help: "Frames per second of the test source.")
    var fps = 30

    @Option(help: "Keyframe interval of the test source, in frames.")
    var gop = 30

    @Option(help: "Bitrate of the test source, kbit/s.")
    var bitrate = 1000

    @Option(help: "Only these scenarios (comma-separated names; see the table).")
    var scenarios: String?

    @Option(help: "Impair the network between the sources and LiveRelay/readers, e.g. loss=2%,delay=20ms,jitter=10ms,reorder=5% (root: network namespaces).")
    var impair: String?

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        let impairment = try impair.map { try Impairment(parsing: $0) }
        let wh = size.lowercased().split(separator: "x").compactMap { Int($0) }
        guard wh.count == 2 else { throw ValidationError("--size: expected WIDTHxHEIGHT") }
        let bench = try LatencyRun(width: wh[0], height: wh[1], fps: fps, gop: gop, bitrate: bitrate, out: out,
                                   seconds: quick ? min(seconds, 12) : seconds, parallel: quick,
                                   only: scenarios.map { Set($0.split(separator: ",").map(String.init)) })
        if let impairment {
            guard getuid() == 0 else {
                print("bench: --impair needs root (network namespaces and iptables); skipped.")
                return
            }
            bench.lab = try NetworkLab(impairment: impairment, scriptPath: bench.scriptPath)
        }
        defer { bench.lab?.tearDown() }
        try bench.run()
    }
}

/// A child process of the bench: stopped on release.
final class BenchProcess {
    let process = Process()
    let name: String
    private let errPipe = Pipe()
    private let errData = ErrBuffer()
    let stdout = Pipe()

    init(_ name: String, _ exe: String, _ args: [String], captureStdout: Bool = false) throws {
        self.name = name
        process.executableURL = URL(fileURLWithPath: exe)
        process.arguments = args
        process.standardError = errPipe
        process.standardOutput = captureStdout ? stdout : errPipe
        process.standardInput = FileHandle.nullDevice
        errPipe.fileHandleForReading.readabilityHandler = { [errData] h in
            let d = h.availableData
            errData.withLock { if $0.count < 1_000_000 { $0.append(d) } }
        }
        try process.run()
    }

    var stderr: String { String(decoding: errData.withLock { $0 }, as: UTF8.self) }

    final class ErrBuffer: Sendable {
        let data = Mutex<Data>(Data())
        func withLock<R>(_ body: (inout Data) -> R) -> R { data.withLock { body(&$0) } }
    }

    /// Waits for a line containing `text` on stderr.
    func waitFor(_ text: String, timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if stderr.contains(text) { return true }
            if !process.isRunning { return false }
            usleep(50_000)
        }
        return false
    }

    /// CPU seconds used so far, from /proc: the scheduler's nanosecond run time of each live
    /// thread (the tick-based user + system times of /proc/PID/stat are 10 ms grains, as much
    /// as a quiet stream uses in a second), else the tick-based figure.
    var cpuSeconds: Double {
        let pid = process.processIdentifier
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty {
            var ns = 0.0
            for t in tasks {
                guard let line = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
                      let first = line.split(separator: " ").first, let v = Double(first) else { continue }
                ns += v
            }
            if ns > 0 { return ns / 1e9 }
        }
        return tickCPUSeconds
    }

    private var tickCPUSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident memory in MiB, from /proc.
    var rssMiB: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let end = Date().addingTimeInterval(2)
        while process.isRunning && Date() < end { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Reads raw grey pictures from a reader's stdout and the stamp in each.
final class StampReader: Sendable {
    struct Sample { let counter: UInt32; let captureMs: Int64; let receivedMs: Int64 }
    let width: Int, height: Int
    private let samples = Mutex<[Sample]>([])
    private let misreads = Atomic<Int>(0)
    private let recording = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(handle: FileHandle, width: Int, height: Int) {
        self.width = width
        self.height = height
        let t = Thread { [self] in
            let frameSize = width * height
            var buffer = [UInt8](repeating: 0, count: frameSize)
            var filled = 0
            let fd = handle.fileDescriptor
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, frameSize - filled) }
                if n <= 0 { break }
                filled += n
                guard filled == frameSize else { continue }
                filled = 0
                let now = MonotonicClock.wallMilliseconds()
                guard recording.load(ordering: .relaxed) else { continue }
                let stamp = buffer.withUnsafeBufferPointer { StampCodec.read(luma: $0.baseAddress!, stride: width, width: width, height: height) }
                if let stamp {
                    samples.withLock { $0.append(Sample(counter: stamp.frameNumber, captureMs: stamp.captureMillis, receivedMs: now)) }
                } else {
                    misreads.add(1, ordering: .relaxed)
                }
            }
            done.signal()
        }
        t.name = "stamp-reader"
        t.start()
    }

    func startRecording() { recording.store(true, ordering: .relaxed) }
    func stopRecording() { recording.store(false, ordering: .relaxed) }
    var all: [Sample] { samples.withLock { $0 } }
    var misreadCount: Int { misreads.load(ordering: .relaxed) }
}

/// One row of the results.
struct ScenarioResult {
    var name: String
    var path: String
    var latencies: [Double]
    var frames: Int
    var dropped: Int
    var outOfOrder: Int
    var misreads: Int
    var cpuPercent: Double?
    var rssMiB: Double?
    var note: String = ""
    /// Percentiles measured elsewhere (the relay's own histograms): 50, 90, 99, max.
    var fixed: [Double: Double] = [:]

    func percentile(_ p: Double) -> Double? {
        guard !latencies.isEmpty else { return fixed[p] }
        let s = latencies.sorted()
        return s[min(s.count - 1, Int((p / 100 * Double(s.count)).rounded(.down)))]
    }
}

/// One run of the latency bench: the infrastructure, the scenarios, the files.
final class LatencyRun {
    struct Scenario {
        let name: String
        let path: String
        let input: [String]
        /// The relay process whose CPU and memory the row reports (nil: none between).
        let relay: String?
        let warmup: Double
        /// A page for headless Chromium (hls.js) instead of an ffmpeg reader.
        var page: String? = nil
        /// An HLS media playlist (URL or file) watched for new segments instead of a reader.
        var playlist: String? = nil
    }

    let width: Int, height: Int, fps: Int, gop: Int, bitrate: Int
    let out: URL
    let seconds: Double
    let parallel: Bool
    let only: Set<String>?
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    var processes: [String: BenchProcess] = [:]
    var notes: [String] = []
    /// Set for impaired runs: the sources live across a veth link.
    var lab: NetworkLab?
    var sourceHost: String { lab?.sourceAddress ?? "127.0.0.1" }

    init(width: Int, height: Int, fps: Int, gop: Int, bitrate: Int, out: String, seconds: Double, parallel: Bool, only: Set<String>?) throws {
        self.width = width; self.height = height; self.fps = fps; self.gop = gop; self.bitrate = bitrate
        self.out = URL(fileURLWithPath: out, isDirectory: true)
        self.seconds = seconds
        self.parallel = parallel
        self.only = only
        try FileManager.default.createDirectory(at: self.out, withIntermediateDirectories: true)
    }

    var testsrc: String { "testsrc://?size=\(width)x\(height)&fps=\(fps)&gop=\(gop)&bitrate=\(bitrate)" }

    static func freePort(udp: Bool = false) -> Int {
        let fd = socket(AF_INET, Int32(udp ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    func start(_ name: String, _ exe: String, _ args: [String], ready: String? = nil, timeout: Double = 20, atSource: Bool = false) throws -> BenchProcess {
        let (e, a) = atSource && lab != nil ? lab!.inSourceNamespace(exe, args) : (exe, args)
        let p = try BenchProcess(name, e, a)
        processes[name] = p
        if let ready, !p.waitFor(ready, timeout: timeout) {
            throw ValidationError("\(name) did not start: \(p.stderr.suffix(400))")
        }
        return p
    }

    func run() throws {
        FFmpegLog.silence()
        let work = out.appendingPathComponent("work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer {
            for p in processes.values { p.stop() }
            try? FileManager.default.removeItem(at: work)
        }
        let fm = FileManager.default
        let haveRTSP = fm.fileExists(atPath: "/usr/lib/python3/dist-packages/gi") && fm.fileExists(atPath: scriptPath("rtsp_server.py"))
        let haveNginx = RTMPServer.isInstalled
        guard fm.fileExists(atPath: "/usr/bin/ffmpeg") else { throw ValidationError("ffmpeg is not installed: run scripts/setup.sh") }

        var serveStreams = ""
        var scenarios: [Scenario] = []
        let servePort = Self.freePort()
        let relay = "http://127.0.0.1:\(servePort)/streams"
        let nobuffer = ["-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "32768", "-analyzeduration", "0"]
        let preview = "preview: { ordering: arrival, freshness: latest, depth: 1, fps: \(fps), quality: 80 }"

        if haveRTSP {
            // The camera: gst-rtsp-server serving the stamped source it receives over UDP.
            let udp = Self.freePort(udp: true), camPort = Self.freePort()
            let mount = "/cam=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=0 )"
            _ = try start("rtsp-camera", "/usr/bin/python3", ["-u", scriptPath("rtsp_server.py"), "--port", String(camPort), "--address", sourceHost, "--mount", mount],
                          ready: "ready", atSource: true)
            _ = try start("camera-source", me, ["publish", "udp://127.0.0.1:\(udp)", "--source", testsrc, "--duration", "100000"], atSource: true)
            let cam = "rtsp://\(sourceHost):\(camPort)/cam"
            serveStreams += "  cam_udp:\n    source: \(cam)\n    transport: udp\n    \(preview)\n"
            scenarios.append(Scenario(name: "floor-rtsp-udp", path: "camera → ffmpeg (RTSP/UDP, nobuffer)", input: nobuffer + ["-rtsp_transport", "udp", "-i", cam], relay: nil, warmup: 3))
            scenarios.append(Scenario(name: "liverelay-preview-rtsp-udp", path: "camera → LiveRelay (RTSP/UDP) → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/cam_udp/preview.mjpg"], relay: "serve", warmup: 3))
            if !parallel {
                serveStreams += "  cam_tcp:\n    source: \(cam)\n    transport: tcp\n    \(preview)\n"
                scenarios.append(Scenario(name: "floor-rtsp-tcp", path: "camera → ffmpeg (RTSP/TCP, nobuffer)", input: nobuffer + ["-rtsp_transport", "tcp", "-i", cam], relay: nil, warmup: 3))
                scenarios.append(Scenario(name: "liverelay-preview-rtsp-tcp", path: "camera → LiveRelay (RTSP/TCP) → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/cam_tcp/preview.mjpg"], relay: "serve", warmup: 3))
            }
        } else {
            notes.append("RTSP scenarios skipped: gst-rtsp-server (python3-gi, gir1.2-gst-rtsp-server-1.0) is not installed.")
        }
        if haveNginx {
            let page = work.appendingPathComponent("page")
            try fm.createDirectory(at: page, withIntermediateDirectories: true)
            let hlsDir = page.appendingPathComponent("nginx-hls")
            // In the source's namespace (across the impaired link) it listens on every address.
            let rtmpPort = try RTMPServer(work: work, loopbackOnly: lab == nil,
                                          application: "hls on; hls_path \(hlsDir.path); hls_fragment 1s; hls_playlist_length 4s;",
                                          launch: { try start($0, $1, $2, atSource: true) }).port
            let src = "rtmp://\(sourceHost):\(rtmpPort)/live/src"
            _ = try start("rtmp-source", me, ["publish", "rtmp://127.0.0.1:\(rtmpPort)/live/src", "--source", testsrc, "--duration", "100000"], atSource: true)
            usleep(1_500_000)
            _ = try start("ffmpeg-hop", "/usr/bin/ffmpeg", ["-v", "error"] + nobuffer + ["-i", src, "-c", "copy", "-f", "flv", "rtmp://\(sourceHost):\(rtmpPort)/live/hop"])
            let ffhls = page.appendingPathComponent("ffmpeg-hls")
            try fm.createDirectory(at: ffhls, withIntermediateDirectories: true)
            _ = try start("ffmpeg-hls", "/usr/bin/ffmpeg", ["-v", "error"] + nobuffer + ["-i", src, "-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_list_size", "5",
                                                                                        "-hls_flags", "delete_segments", ffhls.appendingPathComponent("index.m3u8").path])
            serveStreams += "  rtmp:\n    source: \(src)\n    \(preview)\n    hls: { variant: lowLatency, segment_duration: 1s, part_duration: 200ms }\n"
            serveStreams += "  rtmp_ts:\n    source: \(src)\n    preview: false\n    hls: { variant: mpegts, segment_duration: 1s }\n"
            let hlsClient = ["-live_start_index", "-1"]
            // Segment availability, seen from outside the same way for the three servers.
            let listed = "capture of a segment's last picture → segment listed (playlist polled every 5 ms)"
            scenarios += [
                Scenario(name: "liverelay-hls-mpegts-1s-listed", path: "LiveRelay HLS MPEG-TS 1 s: \(listed)", input: [], relay: "serve", warmup: 3,
                         playlist: "\(relay)/rtmp_ts/hls/index.m3u8"),
                Scenario(name: "ffmpeg-hls-1s-listed", path: "ffmpeg hls muxer 1 s: \(listed)", input: [], relay: "ffmpeg-hls", warmup: 3,
                         playlist: ffhls.appendingPathComponent("index.m3u8").path),
                Scenario(name: "nginx-rtmp-hls-1s-listed", path: "nginx-rtmp HLS 1 s fragments: \(listed)", input: [], relay: "nginx", warmup: 3,
                         playlist: hlsDir.appendingPathComponent("src.m3u8").path),
            ]
            scenarios += [
                Scenario(name: "floor-rtmp", path: "nginx-rtmp → ffmpeg (RTMP, nobuffer)", input: nobuffer + ["-i", src], relay: nil, warmup: 3),
                Scenario(name: "liverelay-preview-rtmp", path: "nginx-rtmp → LiveRelay → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/rtmp/preview.mjpg"], relay: "serve", warmup: 3),
                Scenario(name: "ffmpeg-copy-hop-rtmp", path: "nginx-rtmp → ffmpeg -c copy → nginx-rtmp → ffmpeg", input: nobuffer + ["-i", "rtmp://\(sourceHost):\(rtmpPort)/live/hop"], relay: "ffmpeg-hop", warmup: 3),
                Scenario(name: "liverelay-hls-lowlatency", path: "LiveRelay LL-HLS (1 s / 200 ms parts), ffmpeg HLS client (plays whole segments)", input: hlsClient + ["-i", "\(relay)/rtmp/hls/index.m3u8"], relay: "serve", warmup: 5),
                Scenario(name: "liverelay-hls-mpegts-1s", path: "LiveRelay HLS MPEG-TS 1 s, ffmpeg HLS client", input: hlsClient + ["-i", "\(relay)/rtmp_ts/hls/index.m3u8"], relay: "serve", warmup: 5),
                Scenario(name: "ffmpeg-hls-1s", path: "ffmpeg hls muxer 1 s, ffmpeg HLS client", input: hlsClient + ["-i", ffhls.appendingPathComponent("index.m3u8").path], relay: "ffmpeg-hls", warmup: 5),
                Scenario(name: "nginx-rtmp-hls-1s", path: "nginx-rtmp HLS 1 s fragments, ffmpeg HLS client", input: hlsClient + ["-i", hlsDir.appendingPathComponent("src.m3u8").path], relay: "nginx", warmup: 5),
            ]
            // A real LL-HLS client: hls.js in low-latency mode, in headless Chromium, reading the
            // stamp of every frame it presents. The peers' playlists are served next to the page.
            if fm.fileExists(atPath: "/usr/bin/chromium"), let why = installHLSJS(into: page) {
                notes.append("Browser scenarios skipped: \(why)")
            } else if fm.fileExists(atPath: "/usr/bin/chromium") {
                let pagePort = Self.freePort()
                _ = try start("page-server", "/usr/bin/python3", ["-m", "http.server", String(pagePort), "--bind", "127.0.0.1", "--directory", page.path])
                let pages = "http://127.0.0.1:\(pagePort)"
                func hlsjs(_ src: String) -> String { "\(pages)/hlsjs.html?src=\(src)" }
                scenarios.append(Scenario(name: "liverelay-hls-lowlatency-hlsjs", path: "LiveRelay LL-HLS (1 s / 200 ms parts), hls.js low-latency mode in Chromium",
                                          input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp/hls/index.m3u8")))
                if !parallel {
                    scenarios += [
                        Scenario(name: "liverelay-hls-mpegts-1s-hlsjs", path: "LiveRelay HLS MPEG-TS 1 s, hls.js in Chromium", input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp_ts/hls/index.m3u8")),
                        Scenario(name: "ffmpeg-hls-1s-hlsjs", path: "ffmpeg hls muxer 1 s, hls.js in Chromium", input: [], relay: "ffmpeg-hls", warmup: 6, page: hlsjs("\(pages)/ffmpeg-hls/index.m3u8")),
                        Scenario(name: "nginx-rtmp-hls-1s-hlsjs", path: "nginx-rtmp HLS 1 s fragments, hls.js in Chromium", input: [], relay: "nginx", warmup: 6, page: hlsjs("\(pages)/nginx-hls/src.m3u8")),
                    ]
                }
            } else {
                notes.append("Browser scenarios skipped: chromium is not installed (scripts/setup.sh installs it).")
            }
        } else {
            notes.append("RTMP and HLS peer scenarios skipped: nginx with libnginx-mod-rtmp is not installed.")
        }
        if let only { scenarios = scenarios.filter { only.contains($0.name) } }
        guard !scenarios.isEmpty else { throw ValidationError("no scenario to run") }

        let config = work.appendingPathComponent("serve.yaml")
        try "streams:\n\(serveStreams)".write(to: config, atomically: true, encoding: .utf8)
        _ = try start("serve", me, ["serve", "--config", config.path, "--listen", "127.0.0.1:\(servePort)"], ready: "listening on")
        print("bench: \(scenarios.count) scenarios, \(Int(seconds)) s each\(parallel ? ", side by side" : ""); \(width)x\(height) at \(fps) fps, GOP \(gop)")
        Thread.sleep(forTimeInterval: 3) // sources live, first HLS segments cut

        var results: [ScenarioResult] = []
        let groups: [[Scenario]] = parallel ? [scenarios] : scenarios.map { [$0] }
        for group in groups {
            results += try measure(group, servePort: servePort)
        }
        results += inProcessRows(servePort: servePort, previews: (haveRTSP ? ["cam_udp"] : []) + (haveNginx ? ["rtmp"] : []), hls: haveNginx ? ["rtmp", "rtmp_ts"] : [])
        try write(results)
    }

    /// hls.js is not packaged by Debian: the PyPI gradio wheel carries it as one ES module (see
    /// ../shared/TESTING-RECIPES.md). Cached in /tmp; nil on success, else why not.
    func installHLSJS(into page: URL) -> String? {
        // scripts/hlsjs_page.py: hls.js from the gradio wheel (cached) and the LL player page.
        guard let r = try? Shell.run("/usr/bin/python3", [scriptPath("hlsjs_page.py"), page.path]) else { return "python3 is not installed" }
        guard r.status == 0 else {
            let why = r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)"
            return "hls.js could not be installed: \(why)"
        }
        return nil
    }

    func scriptPath(_ name: String) -> String {
        // The scripts directory next to the package the binary was built in, or the working directory's.
        var dir = URL(fileURLWithPath: me).deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = dir.appendingPathComponent("scripts/\(name)")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate.path }
            dir.deleteLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/scripts/\(name)"
    }

    func measure(_ group: [Scenario], servePort: Int) throws -> [ScenarioResult] {
        var readers: [(Scenario, BenchProcess, StampReader)] = []
        var browsers: [(Scenario, BenchProcess, URL)] = []
        let longestWarmup = group.map(\.warmup).max() ?? 3
        var watchers: [(Scenario, SegmentWatcher)] = []
        for s in group {
            if let playlist = s.playlist {
                watchers.append((s, try SegmentWatcher(name: s.name, playlist: playlist, store: out.appendingPathComponent("work/segments/\(s.name)"))))
                continue
            }
            if let page = s.page {
                let csv = out.appendingPathComponent("work/\(s.name).browser.csv")
                let p = try BenchProcess("browser:\(s.name)", "/usr/bin/python3", [scriptPath("browser.py"), page, "--stamps", "video", "--seconds",
                                                                                  String(longestWarmup + seconds), "--csv", csv.path, "--timeout", "30"])
                browsers.append((s, p, csv))
                continue
            }
            let p = try BenchProcess("reader:\(s.name)", "/usr/bin/ffmpeg", ["-v", "error"] + s.input + ["-an", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(width)x\(height)", "-"], captureStdout: true)
            readers.append((s, p, StampReader(handle: p.stdout.fileHandleForReading, width: width, height: height)))
        }
        defer { for r in readers { r.1.stop() }; for b in browsers { b.1.stop() }; for w in watchers { w.1.stop() } }
        Thread.sleep(forTimeInterval: longestWarmup)
        let relays = Set(group.compactMap(\.relay)).compactMap { processes[$0].map { ($0.name, $0) } }
        let cpu0 = Dictionary(uniqueKeysWithValues: relays.map { ($0.0, $0.1.cpuSeconds) })
        let t0 = Date()
        for r in readers { r.2.startRecording() }
        for w in watchers { w.1.startRecording() }
        Thread.sleep(forTimeInterval: seconds)
        for r in readers { r.2.stopRecording() }
        for w in watchers { w.1.stopRecording() }
        let wall = Date().timeIntervalSince(t0)
        let window = (Int64(t0.timeIntervalSince1970 * 1000), Int64(Date().timeIntervalSince1970 * 1000))
        var cpu: [String: Double] = [:], rss: [String: Double] = [:]
        for (name, p) in relays {
            cpu[name] = (p.cpuSeconds - (cpu0[name] ?? 0)) / wall * 100
            rss[name] = p.rssMiB
        }
        // Browsers report when they finish (the page keeps reading past the window; only the window counts).
        var browserSamples: [String: [StampReader.Sample]] = [:]
        for (s, p, csv) in browsers {
            let end = Date().addingTimeInterval(40)
            while p.process.isRunning && Date() < end { usleep(100_000) }
            let text = (try? String(contentsOf: csv, encoding: .utf8)) ?? ""
            browserSamples[s.name] = text.split(separator: "\n").dropFirst().compactMap { line -> StampReader.Sample? in
                let c = line.split(separator: ",")
                guard c.count == 4, let n = UInt32(c[0]), let t = Int64(c[1]), let r = Int64(c[2]), r >= window.0, r <= window.1 else { return nil }
                return StampReader.Sample(counter: n, captureMs: t, receivedMs: r)
            }
            if browserSamples[s.name]!.isEmpty { browserSamples[s.name + "#why"] = [] ; notes.append("\(s.name): \(p.stderr.suffix(200))") }
            if let h = Self.hlsjsState(p.stderr) { notes.append("\(s.name): \(h)") }
        }
        for w in watchers { w.1.stop() }
        let listedRows = watchers.map { s, w in segmentResult(s, w, cpuPercent: s.relay.flatMap { cpu[$0] }, rssMiB: s.relay.flatMap { rss[$0] }) }
        let all: [(Scenario, BenchProcess?, [StampReader.Sample], Int)] = readers.map { ($0.0, $0.1, $0.2.all, $0.2.misreadCount) }
            + browsers.map { ($0.0, $0.1, browserSamples[$0.0.name] ?? [], 0) }
        return all.map { s, p, samples, misreads in
            try? csv(s.name, samples)
            let count = Self.account(samples.map(\.counter))
            var r = ScenarioResult(name: s.name, path: s.path, latencies: samples.map { Double($0.receivedMs - $0.captureMs) }, frames: samples.count,
                                   dropped: count.dropped, outOfOrder: count.outOfOrder, misreads: misreads,
                                   cpuPercent: s.relay.flatMap { cpu[$0] }, rssMiB: s.relay.flatMap { rss[$0] })
            if samples.isEmpty { r.note = "no pictures: " + String(p?.stderr.split(separator: "\n").last ?? "reader produced nothing") }
            return r
        } + listedRows
    }

    /// Drops and reorders from the source's frame counters in the order a reader got them:
    /// counters missing from the range seen, and counters below one already seen.
    static func account(_ counters: [UInt32]) -> (dropped: Int, outOfOrder: Int) {
        var maxSeen: UInt32?
        var outOfOrder = 0
        for c in counters {
            if let m = maxSeen, c < m { outOfOrder += 1 }
            maxSeen = max(maxSeen ?? c, c)
        }
        let distinct = Set(counters)
        let expected = distinct.isEmpty ? 0 : Int(distinct.max()! - distinct.min()! + 1)
        return (expected - distinct.count, outOfOrder)
    }

    /// The row of a watched playlist: one latency per segment listed in the window (capture of
    /// its last picture → listed); frames, drops, reorders and misreads over every picture of
    /// those segments, decoded after the run.
    func segmentResult(_ s: Scenario, _ w: SegmentWatcher, cpuPercent: Double?, rssMiB: Double?) -> ScenarioResult {
        var samples: [StampReader.Sample] = []
        var counters: [UInt32] = []
        var misreads = 0
        for seg in w.segments {
            let pictures = decodeStamps(seg.file)
            misreads += pictures.misreads
            counters += pictures.stamps.map(\.frameNumber)
            if let last = pictures.stamps.max(by: { $0.frameNumber < $1.frameNumber }) {
                samples.append(StampReader.Sample(counter: last.frameNumber, captureMs: last.captureMillis, receivedMs: seg.listedMs))
            }
        }
        try? csv(s.name, samples)
        let count = Self.account(counters)
        var r = ScenarioResult(name: s.name, path: s.path, latencies: samples.map { Double($0.receivedMs - $0.captureMs) }, frames: counters.count,
                               dropped: count.dropped, outOfOrder: count.outOfOrder, misreads: misreads, cpuPercent: cpuPercent, rssMiB: rssMiB)
        if samples.isEmpty { r.note = "no segment listed in the window" }
        if !w.problems.isEmpty { r.note += (r.note.isEmpty ? "" : "; ") + w.problems.prefix(3).joined(separator: "; ") }
        return r
    }

    /// Every picture of a segment file, decoded by ffmpeg to grey, with its stamp.
    func decodeStamps(_ file: URL) -> (stamps: [Stamp], misreads: Int) {
        guard let p = try? BenchProcess("segment", "/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-an", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(width)x\(height)", "-"],
                                        captureStdout: true) else { return ([], 0) }
        let data = p.stdout.fileHandleForReading.readDataToEndOfFile()
        p.process.waitUntilExit()
        let size = width * height
        var stamps: [Stamp] = [], misreads = 0
        data.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return }
            for k in 0..<(data.count / size) {
                if let st = StampCodec.read(luma: base + k * size, stride: width, width: width, height: height) { stamps.append(st) } else { misreads += 1 }
            }
        }
        return (stamps, misreads)
    }

    /// What hls.js said of its own play-out (browser.py's "hlsjs" object), in one line.
    static func hlsjsState(_ output: String) -> String? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let h = o["hlsjs"] as? [String: Any], let target = h["targetLatency"] as? Double else { return nil }
        let stalls = h["stalls"] as? Int ?? 0
        let td = (h["targetDuration"] as? Double).map { ", target duration \($0) s" } ?? ""
        return String(format: "hls.js aimed at %.2f s behind the live edge (stalls: %d%@)", target, stalls, td)
    }

    /// LiveRelay's own histograms: capture → preview sink, and last frame → HLS part/segment listed.
    func inProcessRows(servePort: Int, previews: [String], hls: [String]) -> [ScenarioResult] {
        func api(_ stream: String) -> [String: Any]? {
            guard let data = try? Data(contentsOf: URL(string: "http://127.0.0.1:\(servePort)/api/streams/\(stream)")!) else { return nil }
            return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
        func fixed(_ s: [String: Any]) -> [Double: Double] {
            var out: [Double: Double] = [:]
            for (k, p) in [("p50_ms", 50.0), ("p90_ms", 90), ("p99_ms", 99), ("max_ms", 100)] { if let v = s[k] as? Double { out[p] = v } }
            return out
        }
        var rows: [ScenarioResult] = []
        for preview in previews {
            guard let j = api(preview), let sinks = j["sinks"] as? [[String: Any]],
                  let sink = sinks.first(where: { $0["name"] as? String == "preview" }), let cap = sink["capture_to_delivered"] as? [String: Any] else { continue }
            if let st = j["stream"] as? [String: Any], let d = st["decode_counters"] as? [String: Any] {
                let n = { (k: String) in d[k] as? Int ?? 0 }
                notes.append("\(preview) decoder (whole run): \(n("frames_decoded")) frames decoded, \(n("corrupt_frames")) concealed (damaged input), \(n("dropped_corrupt_frames")) damaged ones not shown, \(n("corrupt_packets")) packets rejected, \(n("skipped_until_keyframe")) skipped waiting for a keyframe; stamps readable before JPEG: \(cap["count"] as? Int ?? 0) of \(sink["delivered"] as? Int ?? 0) pictures.")
            }
            var r = ScenarioResult(name: "liverelay-preview-sink-\(preview)", path: "in-process: capture → LiveRelay's preview sink, before JPEG (whole run)",
                                   latencies: [], frames: (sink["delivered"] as? Int) ?? 0, dropped: ((sink["dropped"] as? [String: Int]) ?? [:]).values.reduce(0, +),
                                   outOfOrder: (sink["out_of_order"] as? Int) ?? 0, misreads: 0, cpuPercent: nil, rssMiB: nil)
            r.fixed = fixed(cap)
            rows.append(r)
        }
        for stream in hls {
            guard let j = api(stream), let h = j["hls"] as? [String: Any], let a = h["availability"] as? [String: Any] else { continue }
            let variant = h["variant"] as? String ?? "?"
            var r = ScenarioResult(name: "liverelay-hls-\(variant)-availability", path: "in-process: last frame arrived → its \(variant == "lowLatency" ? "part" : "segment") listed (whole run)",
                                   latencies: [], frames: (a["count"] as? Int) ?? 0, dropped: 0, outOfOrder: 0, misreads: 0, cpuPercent: nil, rssMiB: nil)
            r.fixed = fixed(a)
            rows.append(r)
        }
        return rows
    }

    func csv(_ name: String, _ samples: [StampReader.Sample]) throws {
        var text = "frame,capture_ms,received_ms,latency_ms\n"
        for s in samples { text += "\(s.counter),\(s.captureMs),\(s.receivedMs),\(s.receivedMs - s.captureMs)\n" }
        try text.write(to: out.appendingPathComponent("\(name).csv"), atomically: true, encoding: .utf8)
    }

    func write(_ results: [ScenarioResult]) throws {
        func f(_ v: Double?) -> String { v.map { $0 < 10 ? String(format: "%.1f", $0) : String(format: "%.0f", $0) } ?? "–" }
        let floors = Dictionary(results.filter { $0.name.hasPrefix("floor-") }.compactMap { r in r.percentile(50).map { (String(r.name.dropFirst(6)), $0) } }) { a, _ in a }
        var md = "| scenario | path | p50 ms | p90 ms | p99 ms | max ms | p50 − floor | frames | dropped | out of order | misreads | relay CPU % | relay RSS MiB |\n"
        md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in results {
            let transport = ["rtsp-udp", "rtsp-tcp", "rtmp"].first { r.name.hasSuffix($0) }
            let delta = r.name.hasPrefix("floor-") || r.path.hasPrefix("in-process") ? nil : transport.flatMap { t in floors[t].flatMap { fl in r.percentile(50).map { $0 - fl } } }
            md += "| \(r.name) | \(r.path) | \(f(r.percentile(50))) | \(f(r.percentile(90))) | \(f(r.percentile(99))) | \(f(r.latencies.max() ?? r.fixed[100])) | \(delta.map { String(format: "%+.0f", $0) } ?? "") | \(r.frames) | \(r.dropped) | \(r.outOfOrder) | \(r.misreads) | \(f(r.cpuPercent)) | \(f(r.rssMiB)) |\n"
        }
        for r in results where !r.note.isEmpty { md += "\n- \(r.name): \(r.note)" }
        for n in notes { md += "\n- \(n)" }
        var cpuModel = "unknown CPU"
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8), let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
            cpuModel = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? cpuModel
        }
        var header = "Latency, capture → picture at the reader, \(width)x\(height) at \(fps) fps, GOP \(gop), \(bitrate) kbit/s; \(Int(seconds)) s per scenario\(parallel ? " (side by side)" : ""). \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpuModel), \(ISO8601DateFormatter().string(from: Date())).\n\n"
        if let lab { header += "Impaired link between the sources and LiveRelay/readers: \(lab.impairment) (\(lab.method)).\n\n" }
        try (header + md + "\n").write(to: out.appendingPathComponent("results.md"), atomically: true, encoding: .utf8)
        try LatencyPlots.cdf(results).write(to: out.appendingPathComponent("latency-cdf.svg"), atomically: true, encoding: .utf8)
        try LatencyPlots.overTime(results, out: out).write(to: out.appendingPathComponent("latency-time.svg"), atomically: true, encoding: .utf8)
        print(header + md)
        print("\nwritten: \(out.path)/results.md, one CSV per scenario, latency-cdf.svg, latency-time.svg")
    }
}

/// Plots a person can open: latency CDF per scenario, and latency over time.
enum LatencyPlots {
    static let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]

    static func frame(_ title: String, xLabel: String, yLabel: String, xMax: Double, yMax: Double, body: String, legend: [String]) -> String {
        let w = 900.0, h = 520.0, l = 70.0, r = 260.0, t = 40.0, b = 50.0
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"\(l)\" y=\"24\" font-size=\"15\">\(title)</text>\n"
        svg += "<line x1=\"\(l)\" y1=\"\(h - b)\" x2=\"\(w - r)\" y2=\"\(h - b)\" stroke=\"black\"/><line x1=\"\(l)\" y1=\"\(t)\" x2=\"\(l)\" y2=\"\(h - b)\" stroke=\"black\"/>\n"
        for i in 0...5 {
            let x = l + (w - l - r) * Double(i) / 5, y = h - b - (h - t - b) * Double(i) / 5
            svg += "<text x=\"\(x)\" y=\"\(h - b + 16)\" text-anchor=\"middle\">\(String(format: "%.0f", xMax * Double(i) / 5))</text>\n"
            svg += "<text x=\"\(l - 6)\" y=\"\(y + 4)\" text-anchor=\"end\">\(String(format: yMax <= 1 ? "%.1f" : "%.0f", yMax * Double(i) / 5))</text>\n"
        }
        svg += "<text x=\"\((l + w - r) / 2)\" y=\"\(h - 12)\" text-anchor=\"middle\">\(xLabel)</text>\n"
        svg += "<text x=\"16\" y=\"\((t + h - b) / 2)\" transform=\"rotate(-90 16 \((t + h - b) / 2))\" text-anchor=\"middle\">\(yLabel)</text>\n"
        svg += body
        for (i, name) in legend.enumerated() {
            let y = t + 16 * Double(i)
            svg += "<rect x=\"\(w - r + 12)\" y=\"\(y)\" width=\"12\" height=\"4\" fill=\"\(colours[i % colours.count])\"/><text x=\"\(w - r + 30)\" y=\"\(y + 6)\">\(name)</text>\n"
        }
        return svg + "</svg>\n"
    }

    static func scale(_ v: Double, _ max: Double, _ from: Double, _ to: Double) -> Double { from + (to - from) * min(1, v / max) }

    static func cdf(_ results: [ScenarioResult]) -> String {
        let shown = results.filter { !$0.latencies.isEmpty }
        let xMax = max(50, (shown.compactMap { $0.percentile(99) }.max() ?? 100) * 1.1)
        var body = ""
        for (i, r) in shown.enumerated() {
            let s = r.latencies.sorted()
            let step = max(1, s.count / 300)
            let points = stride(from: 0, to: s.count, by: step).map { k in
                "\(String(format: "%.1f", scale(s[k], xMax, 70, 640))),\(String(format: "%.1f", 470 - 430 * Double(k + 1) / Double(s.count)))"
            }
            body += "<polyline fill=\"none\" stroke=\"\(colours[i % colours.count])\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
        }
        return frame("Latency CDF (capture → picture at the reader)", xLabel: "latency, ms", yLabel: "fraction of frames", xMax: xMax, yMax: 1, body: body, legend: shown.map(\.name))
    }

    static func overTime(_ results: [ScenarioResult], out: URL) -> String {
        let shown = results.filter { !$0.latencies.isEmpty }
        let yMax = max(50, (shown.compactMap { $0.percentile(99) }.max() ?? 100) * 1.1)
        var body = ""
        var xMax = 1.0
        var series: [[(Double, Double)]] = []
        for r in shown {
            // Received time comes from the CSV the run just wrote.
            let text = (try? String(contentsOf: out.appendingPathComponent("\(r.name).csv"), encoding: .utf8)) ?? ""
            let rows = text.split(separator: "\n").dropFirst().compactMap { line -> (Double, Double)? in
                let c = line.split(separator: ",")
                guard c.count == 4, let t = Double(c[2]), let l = Double(c[3]) else { return nil }
                return (t, l)
            }
            guard let t0 = rows.first?.0 else { series.append([]); continue }
            let pts = rows.map { (($0.0 - t0) / 1000, $0.1) }
            xMax = max(xMax, pts.last?.0 ?? 1)
            series.append(pts)
        }
        for (i, pts) in series.enumerated() {
            let step = max(1, pts.count / 400)
            let p = stride(from: 0, to: pts.count, by: step).map { k in
                "\(String(format: "%.1f", scale(pts[k].0, xMax, 70, 640))),\(String(format: "%.1f", 470 - (scale(pts[k].1, yMax, 0, 430))))"
            }
            body += "<polyline fill=\"none\" stroke=\"\(colours[i % colours.count])\" stroke-width=\"1.5\" points=\"\(p.joined(separator: " "))\"/>\n"
        }
        return frame("Latency over time", xLabel: "seconds into the run", yLabel: "latency, ms", xMax: xMax, yMax: yMax, body: body, legend: shown.map(\.name))
    }
}
