import MediaCore
import Foundation
import Synchronization
import Glibc
import Relay
import RelayAPI

/// `liverelay bench ingest`: N RTMP publishers (one in-process load generator replaying an FLV
/// clip in real time) into LiveRelay's one-port ingest, HLS out; then the same N into
/// nginx-rtmp, pulled by N `ffmpeg -c copy -f hls`. CPU and memory per stream, drops, and how
/// many streams were live. The generator is not counted.
public struct IngestBenchmark {
    /// Publisher counts to sweep (comma-separated).
    public var publishers = "8,64,256"
    /// Seconds measured per point.
    public var seconds: Double = 15
    /// Also run the nginx-rtmp + ffmpeg peer at each point.
    public var peer = true
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        FFmpegLog.silence()
        let counts = publishers.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...1024).contains($0) }) else { throw BenchError("--publishers: expected counts such as 8,64,256") }
        let outDir = URL(fileURLWithPath: out, isDirectory: true)
        let work = outDir.appendingPathComponent("ingest-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // The clip: 10 s of 640x360 H.264 at 30 fps, 1 Mbit/s, 1 s GOPs, as FLV.
        let clip = outDir.appendingPathComponent("testsrc2-360p.flv").path
        if !FileManager.default.fileExists(atPath: clip) {
            let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "10",
                                                             "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-b:v", "1000k", "-pix_fmt", "yuv420p", "-f", "flv", clip])
            guard r.status == 0 else { throw BenchError("ffmpeg could not make \(clip): \(r.stderr)") }
        }
        let tags = try FLVTags(file: clip)
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let helper = ThroughputBenchmark.window(seconds: seconds)
        var rows: [String] = []
        var notes: [String] = []
        for n in counts {
            // LiveRelay: one port, N publish streams, HLS MPEG-TS out.
            let ingestPort = LatencyRun.freePort()
            var yaml = "ingest:\n  rtmp: {listen: \"127.0.0.1:\(ingestPort)\"}\nstreams:\n"
            for i in 0..<n { yaml += "  p\(i): {source: publish, preview: false, hls: {variant: mpegts, segment_duration: 2s}}\n" }
            yaml += "  first: {source: publish, preview: {fps: 30}}\n"
            let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve-ingest-\(n).yaml"),
                                                       ready: "RTMP ingest listening", timeout: 60)
            // The process with its N streams set up and waiting: what publishers add is counted
            // against this.
            Thread.sleep(forTimeInterval: 1)
            let idleRSS = serve.rssMiB
            let load = RTMPLoad(clip: tags)
            let t0 = Date()
            do { try load.start((0..<n).map { "rtmp://127.0.0.1:\(ingestPort)/live/p\($0)" }, timeout: 60) } catch {
                load.stop(); serve.stop(); throw error
            }
            notes.append("\(n) publishers on air in \(String(format: "%.1f", Date().timeIntervalSince(t0))) s.")
            let ours = helper.measureWindow(serve: serve, port: port, n: n, decode: false, fps: 30)
            let live = Self.liveStreams(port: port)
            // Publish → first picture, while the N publish: a fresh publisher on the stream with a
            // preview, five times; from its first keyframe sent to a snapshot that is a picture.
            let tries = (0..<5).map { _ in Self.firstPicture(ingestPort: ingestPort, httpPort: port, clip: tags) }
            let firsts = tries.compactMap { $0 }.sorted()
            if !firsts.isEmpty {
                let each = tries.map { $0.map { String(Int($0)) } ?? "none" }.joined(separator: ", ")
                notes.append("\(n) publishers: publish → first picture in the preview (first keyframe sent → snapshot no longer the slate, polled every 5 ms): the stream's first publisher, then four returning ones: \(each) ms (p50 \(Int(firsts[firsts.count / 2])) ms).")
            }
            load.stop()
            serve.stop()
            let oursPerStream = ours.ours.cpu / Double(n)
            var peerRow: String?
            var ratio = ""
            if peer && RTMPServer.isInstalled {
                // The peer: nginx-rtmp taking the same N publishers, N ffmpeg remuxing to HLS.
                let rtmp = try RTMPServer(work: work)
                defer { rtmp.process.stop() }
                let peerLoad = RTMPLoad(clip: tags)
                defer { peerLoad.stop() }
                try peerLoad.start((0..<n).map { "rtmp://127.0.0.1:\(rtmp.port)/live/p\($0)" }, timeout: 60)
                let pulls = try helper.startFFmpeg(inputs: (0..<n).map { "rtmp://127.0.0.1:\(rtmp.port)/live/p\($0)" }, realtime: false, work: work)
                defer { for p in pulls { p.stop() } }
                Thread.sleep(forTimeInterval: 3)
                let procs = pulls + [rtmp.process]
                let c0 = procs.map(\.cpuSeconds), start = Date()
                Thread.sleep(forTimeInterval: seconds)
                let wall = Date().timeIntervalSince(start)
                let cpu = zip(procs.map(\.cpuSeconds), c0).map { $0 - $1 }.reduce(0, +) / wall * 100 / Double(n)
                let rss = procs.map(\.rssMiB).reduce(0, +) / Double(n)
                let running = pulls.filter { $0.process.isRunning }.count
                ratio = String(format: "%.2f", oursPerStream / max(0.0001, cpu))
                peerRow = "| \(n) | nginx-rtmp + \(n) × ffmpeg -c copy -f hls | \(f(cpu)) | \(f(rss)) | | | | \(running) of \(n) ffmpeg running | |"
            }
            rows.append("| \(n) | LiveRelay one-port ingest → HLS | \(f(oursPerStream)) | \(f(ours.ours.rss / Double(n))) | \(f(max(0, ours.ours.rss - idleRSS) / Double(n))) | \(ratio) | \(ours.ours.drops) | \(live) of \(n) | \(String(format: "%.2f", ours.ours.speed)) |")
            if let peerRow { rows.append(peerRow) }
        }
        var md = "Ingest: N RTMP publishers replaying \(URL(fileURLWithPath: clip).lastPathComponent) (640x360, 30 fps, 1 Mbit/s) in real time from one in-process load generator (not counted), \(Int(seconds)) s per point, \(ProcessInfo.processInfo.activeProcessorCount) cores.\n\n"
        md += "| publishers | path | CPU % per stream | RSS MiB per stream | RSS MiB added per publisher | LiveRelay / peer CPU | drops | streams live | speed |\n|---:|---|---:|---:|---:|---:|---:|---|---:|\n"
        md += rows.joined(separator: "\n") + "\n\n" + notes.map { "- \($0)" }.joined(separator: "\n") + "\n"
        print(md)
        try md.write(to: outDir.appendingPathComponent("ingest.md"), atomically: true, encoding: .utf8)
    }

    func f(_ v: Double) -> String { v < 10 ? String(format: "%.2f", v) : String(format: "%.0f", v) }

    /// Milliseconds from a new publisher's first keyframe to the first real picture of stream
    /// `first` (its snapshot no longer the slate); nil when it did not come within 5 s.
    static func firstPicture(ingestPort: Int, httpPort: Int, clip: FLVTags) -> Double? {
        // The previous publisher's picture must be gone first: the stream shows the slate again.
        func isPicture() -> Bool { Self.snapshotIsPicture(port: httpPort, path: "/streams/first/snapshot.jpg") }
        var waited = 0
        while isPicture() && waited < 400 { usleep(10_000); waited += 1 }
        let load = RTMPLoad(clip: clip)
        defer { load.stop() }
        guard (try? load.start(["rtmp://127.0.0.1:\(ingestPort)/live/first"], timeout: 5)) != nil else { return nil }
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            if isPicture() {
                let now = MonotonicClock.nanoseconds()
                guard let s = load.sessions.withLock({ $0.first }), case let t0 = s.firstSentNanos.load(ordering: .relaxed), t0 > 0 else { return nil }
                return Double(now &- t0) / 1e6
            }
            usleep(5_000)
        }
        return nil
    }

    /// One HTTP/1.0 GET over a plain socket (a poll every few milliseconds: no process, no
    /// session): 200 without `X-LiveRelay-Signal: lost`.
    static func snapshotIsPicture(port: Int, path: String) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { return false }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { return false }
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while head.count < 65536 {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            head += chunk[0..<n]
            if let text = String(bytes: head, encoding: .isoLatin1), let end = text.range(of: "\r\n\r\n") {
                let headers = text[..<end.lowerBound].lowercased()
                let status = headers.split(separator: "\r\n").first ?? ""
                return status.hasPrefix("http/1.") && status.contains(" 200") && !headers.contains("x-liverelay-signal: lost")
            }
        }
        return false
    }

    /// Streams whose state is `live` in the API.
    static func liveStreams(port: Int) -> Int {
        guard let data = ChildProcess.httpBody("http://127.0.0.1:\(port)/api/streams"),
              let streams = try? RelayAPI.decode([StreamView].self, from: data) else { return 0 }
        return streams.filter { $0.stream.state == .live }.count
    }
}
