import MediaCore
import Foundation
import Glibc
import Relay
import RelayAPI

/// `liverelay bench faults`: the field's faults against `liverelay serve` as a user runs it.
/// - A camera (gst-rtsp-server) killed and restarted `cycles` times, outages short and long:
///   the time from its serving again to the stream being live again (the API, polled every
///   10 ms), and the server's descriptors, threads and memory at the start and at the end.
/// - A source with no keyframe after its first, for `keyframeless` seconds, with classic HLS:
///   memory over time, and segments still listed on time.
public struct FaultsBenchmark {
    /// Restart cycles.
    public var cycles = 20
    /// Outages in seconds, used in turn (comma-separated).
    public var outages = "1,1,1,1,8"
    /// Seconds of the keyframe-less source (0: skip).
    public var keyframeless: Double = 60
    /// Seconds of the soak: `soakStreams` streams, viewers joining and leaving every second (0: skip).
    public var soak: Double = 0
    public var soakStreams = 16
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let lengths = outages.split(separator: ",").compactMap { Double($0) }
        guard !lengths.isEmpty, lengths.allSatisfy({ $0 > 0 && $0 <= 120 }) else { throw BenchError("--outages: expected seconds such as 1,1,1,1,8") }
        guard (1...1000).contains(cycles) else { throw BenchError("--cycles: expected 1 to 1000") }
        let outDir = URL(fileURLWithPath: out, isDirectory: true)
        let work = outDir.appendingPathComponent("faults-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scripts = LatencyRun.scriptsDirectory(near: me)
        var md = "Faults against `liverelay serve`, \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ISO8601DateFormatter().string(from: Date())).\n\n"

        // 1. A camera that vanishes and returns.
        let camPort = LatencyRun.freePort()
        func startCamera() throws -> ChildProcess {
            let c = try ChildProcess(name: "camera", "/usr/bin/python3", ["-u", scripts + "/rtsp_server.py", "--port", String(camPort)])
            guard c.waitFor("ready", timeout: 20) else { c.stop(); throw BenchError("the camera (gst-rtsp-server) did not start: \(c.stderr.suffix(200))") }
            return c
        }
        var camera = try startCamera()
        let yaml = "streams:\n  cam:\n    source: rtsp://127.0.0.1:\(camPort)/test\n    preview: false\n"
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("faults.yaml"))
        defer { serve.stop(); camera.stop() }
        let pid = serve.process.processIdentifier
        guard Self.waitLive(port: port, after: 0, timeout: 20) != nil else { throw BenchError("the stream never went live") }
        var recoveries: [(outage: Double, seconds: Double?)] = []
        var first: Resources?
        print("bench faults: \(cycles) cycles, outages \(outages) s")
        for i in 0..<cycles {
            let outage = lengths[i % lengths.count]
            let before = Self.status(port)?.connections ?? 0
            camera.stop()
            Thread.sleep(forTimeInterval: outage)
            camera = try startCamera()
            let ready = MonotonicClock.nanoseconds()
            let live = Self.waitLive(port: port, after: before, timeout: 30)
            recoveries.append((outage, live.map { Double($0 &- ready) / 1e9 }))
            if i == 0 { first = Resources(pid: pid) }
            if (i + 1) % 10 == 0 { print("  \(i + 1) cycles") }
        }
        Thread.sleep(forTimeInterval: 2)
        let last = Resources(pid: pid)
        md += "### A camera killed and restarted \(cycles) times\n\n"
        md += "```sh\nliverelay bench faults --cycles \(cycles) --outages \(outages) --keyframeless \(Int(keyframeless))\n```\n\n"
        md += "gst-rtsp-server restarted after each outage; recovery = from its \"ready\" to the stream live again with a new connection (API polled every 10 ms); default stream settings (`transport: auto`).\n\n"
        md += "| outage s | cycles | back p50 s | back p90 s | back max s | back ≤ 1 s | never back |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        for length in Set(lengths).sorted() {
            let rows = recoveries.filter { $0.outage == length }
            let times = rows.compactMap(\.seconds).sorted()
            func q(_ p: Double) -> String { times.isEmpty ? "–" : String(format: "%.2f", times[min(times.count - 1, Int(p * Double(times.count)))]) }
            md += "| \(length) | \(rows.count) | \(q(0.5)) | \(q(0.9)) | \(times.last.map { String(format: "%.2f", $0) } ?? "–") | \(times.filter { $0 <= 1 }.count) | \(rows.count - times.count) |\n"
        }
        if let first {
            md += "\nThe server after the first cycle → after the last: descriptors \(first.fds) → \(last.fds), threads \(first.threads) → \(last.threads), RSS \(String(format: "%.1f", first.rssMiB)) → \(String(format: "%.1f", last.rssMiB)) MiB.\n"
        }
        serve.stop()
        camera.stop()

        // 2. A source without keyframes.
        if keyframeless > 0 {
            md += "\n### A source with no keyframe after its first, \(Int(keyframeless)) s\n\n"
            let yaml = "streams:\n  nokey:\n    source: \"testsrc://?size=640x360&fps=30&gop=10000\"\n    preview: false\n    hls: {variant: mpegts, segment_duration: 1, segment_count: 6}\n"
            let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("nokey.yaml"))
            defer { serve.stop() }
            let pid = serve.process.processIdentifier
            var samples: [(t: Double, rss: Double, sequence: Int, target: Int, longest: Double)] = []
            let t0 = Date()
            while Date().timeIntervalSince(t0) < keyframeless {
                Thread.sleep(forTimeInterval: min(10, keyframeless / 6))
                let text = (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "2", "http://127.0.0.1:\(port)/streams/nokey/hls/index.m3u8"], timeout: 5).stdout) ?? ""
                let lines = text.split(separator: "\n")
                let seq = lines.first { $0.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") }.flatMap { Int($0.dropFirst(22)) } ?? -1
                let target = lines.first { $0.hasPrefix("#EXT-X-TARGETDURATION:") }.flatMap { Int($0.dropFirst(22)) } ?? -1
                let longest = lines.filter { $0.hasPrefix("#EXTINF:") }.compactMap { Double($0.dropFirst(8).split(separator: ",").first ?? "") }.max() ?? 0
                samples.append((Date().timeIntervalSince(t0), Resources(pid: pid).rssMiB, seq, target, longest))
            }
            md += "Classic HLS, 1 s segments (`testsrc://?gop=10000`: one keyframe in 333 s).\n\n| s | RSS MiB | media sequence | TARGETDURATION | longest EXTINF s |\n|---:|---:|---:|---:|---:|\n"
            for s in samples { md += String(format: "| %.0f | %.1f | %d | %d | %.3f |\n", s.t, s.rss, s.sequence, s.target, s.longest) }
        }
        if soak > 0 {
            md += "\n### Soak: \(soakStreams) streams, viewers joining and leaving every second, \(Int(soak)) s\n\n"
            let samples = try Self.soak(me: me, streams: soakStreams, seconds: soak, work: work.path)
            md += "Each stream: the test source at 320x180, 15 fps, preview and classic HLS. Every second an MJPEG viewer joins one stream for 1.5 s, a snapshot and an HLS playlist with its newest segment are fetched from two others.\n\n"
            md += "| s | RSS MiB | descriptors | threads | requests so far |\n|---:|---:|---:|---:|---:|\n"
            for x in samples { md += String(format: "| %.0f | %.1f | %d | %d | %d |\n", x.seconds, x.resources.rssMiB, x.resources.fds, x.resources.threads, x.requests) }
        }
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        try md.write(to: outDir.appendingPathComponent("faults.md"), atomically: true, encoding: .utf8)
        print(md)
        print("written: \(outDir.path)/faults.md")
    }

    /// `streams` test-source streams with previews and HLS, viewers joining and leaving every
    /// second, for `seconds`: the server's resources sampled every tenth of the run. Throws, with
    /// the server's last words, when it ends before the soak does.
    public static func soak(me: String, streams: Int, seconds: Double, work workPath: String) throws -> [(seconds: Double, resources: Resources, requests: Int)] {
        let work = URL(fileURLWithPath: workPath, isDirectory: true)
        var yaml = "streams:\n"
        for i in 0..<streams {
            yaml += "  s\(i): {source: \"testsrc://?size=320x180&fps=15&gop=15&bitrate=300\", preview: {fps: 15}, hls: {variant: mpegts, segment_duration: 1}}\n"
        }
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("soak.yaml"))
        defer { serve.stop() }
        let pid = serve.process.processIdentifier
        let base = "http://127.0.0.1:\(port)/streams"
        // Every stream live before the clock starts (a slow start is not what the soak measures).
        let startBy = Date().addingTimeInterval(30)
        while IngestBenchmark.liveStreams(port: port) < streams {
            guard Date() < startBy, serve.process.isRunning else {
                throw BenchError("\(IngestBenchmark.liveStreams(port: port)) of \(streams) streams live after 30 s (serve \(serve.process.isRunning ? "running, state \(Resources(pid: pid).state)" : "ended")); it said: " + serve.stderr.suffix(1500))
            }
            usleep(100_000)
        }
        var samples: [(Double, Resources, Int)] = []
        var viewers: [ChildProcess] = []
        var requests = 0
        let t0 = Date()
        var nextSample = 0.0
        var tick = 0
        while Date().timeIntervalSince(t0) < seconds {
            let a = tick % streams, b = (tick + streams / 3) % streams, c = (tick + 2 * streams / 3) % streams
            // A viewer joins for 1.5 s and leaves; a snapshot; a player's playlist and newest segment.
            if let v = try? ChildProcess(name: "viewer", "/usr/bin/curl", ["-s", "-o", "/dev/null", "--max-time", "1.5", "\(base)/s\(a)/preview.mjpg"]) { viewers.append(v) }
            _ = try? ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "--max-time", "2", "\(base)/s\(b)/snapshot.jpg"], timeout: 5)
            let playlist = (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "2", "\(base)/s\(c)/hls/index.m3u8"], timeout: 5).stdout) ?? ""
            if let seg = playlist.split(separator: "\n").last(where: { $0.hasSuffix(".ts") }) {
                _ = try? ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "--max-time", "2", "\(base)/s\(c)/hls/\(seg)"], timeout: 5)
                requests += 1
            }
            requests += 3
            viewers.removeAll { !$0.process.isRunning }
            let t = Date().timeIntervalSince(t0)
            guard serve.process.isRunning else {
                let how = serve.process.terminationReason == .uncaughtSignal ? "signal" : "status"
                throw BenchError(String(format: "the server ended (%@ %d) %.0f s into the soak; it said: ", how, serve.process.terminationStatus, t) + serve.stderr.suffix(1500))
            }
            if t >= nextSample {
                samples.append((t, Resources(pid: pid), requests))
                nextSample += seconds / 10
            }
            tick += 1
            let next = t0.addingTimeInterval(Double(tick))
            if next > Date() { Thread.sleep(until: next) }
        }
        for v in viewers { _ = v.wait(timeout: 3) }
        Thread.sleep(forTimeInterval: 1)
        samples.append((Date().timeIntervalSince(t0), Resources(pid: pid), requests))
        return samples
    }

    /// `cam`'s status as the API shows it; nil when nothing (or not a stream) answers.
    static func status(_ port: Int) -> StreamStatus? {
        ChildProcess.decode(StreamView.self, from: "http://127.0.0.1:\(port)/api/streams/cam", maxTime: 1)?.stream
    }

    /// Monotonic nanoseconds when the stream was seen live on a connection after `after`.
    static func waitLive(port: Int, after: Int, timeout: Double) -> UInt64? {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            let s = status(port)
            if s?.state == .live, (s?.connections ?? 0) > after { return MonotonicClock.nanoseconds() }
            usleep(10_000)
        }
        return nil
    }

    /// A process's descriptors, threads and resident memory, from /proc.
    public struct Resources: Sendable {
        public var fds = 0, threads = 0, rssMiB = 0.0
        /// The process's state letter (`S` sleeping, `R` running, `D` waiting on the disk, `T`
        /// stopped), "-" when it is gone.
        public var state = "-"
        init(pid: Int32) {
            fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                if line.hasPrefix("Threads:"), parts.count > 1 { threads = Int(parts[1]) ?? 0 }
                if line.hasPrefix("VmRSS:"), parts.count > 1 { rssMiB = (Double(parts[1]) ?? 0) / 1024 }
                if line.hasPrefix("State:"), parts.count > 1 { state = String(parts[1]) }
            }
        }
    }
}
