import MediaCore
import Relay
import RelayAPI
import Foundation
import Glibc

/// `liverelay bench recordings`: the archive's figures with a real `serve` and a real client
/// (curl): listing 30 days of 1-minute segments (43,200 catalog rows), the first byte of
/// playback and of export for ranges of a 24-hour recording (1,440 one-minute fragmented MP4
/// files: hard links of one), how fast an export downloads against real time; then recording
/// CPU per stream for N streams against N `ffmpeg -c copy -f segment` of the same looped clip,
/// in the same run, with the recordings' drops.
public struct RecordingsBenchmark {
    /// Stream counts for the recording CPU rows (comma-separated).
    public var streams = "8,64"
    /// Seconds measured per recording point.
    public var seconds: Double = 20
    /// Also run the ffmpeg peer at each point.
    public var peer = true
    public var out = "./bench-results"

    public init() {}

    struct Timing { var p50: Double; var max: Double; var n: Int }

    static func timing(_ values: [Double]) -> Timing {
        let s = values.sorted()
        return Timing(p50: s.isEmpty ? 0 : s[s.count / 2], max: s.last ?? 0, n: s.count)
    }

    /// curl's own clock: seconds to the first byte and to the last, and bytes.
    static func curl(_ url: String, range: String? = nil) throws -> (first: Double, total: Double, bytes: Int, code: Int) {
        var args = ["-s", "-g", "-o", "/dev/null", "-w", "%{time_starttransfer} %{time_total} %{size_download} %{http_code}"]
        if let range { args += ["-r", range] }
        let r = try ChildProcess.run("/usr/bin/curl", args + [url], timeout: 600)
        let f = r.stdout.split(separator: " ")
        guard f.count == 4, let a = Double(f[0]), let b = Double(f[1]), let n = Int(f[2]), let c = Int(f[3]) else { throw BenchError("curl \(url): \(r.output)") }
        return (a, b, n, c)
    }

    public func run() throws {
        FFmpegLog.silence()
        let counts = streams.split(separator: ",").compactMap { Int($0) }
        guard counts.allSatisfy({ (1...256).contains($0) }) else { throw BenchError("--streams: expected counts such as 8,64") }
        let outDir = URL(fileURLWithPath: out, isDirectory: true)
        let work = outDir.appendingPathComponent("recordings-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path

        let minute = try RecordedMinute(in: work)
        let one = minute.path, bytes = minute.bytes, sha = minute.sha256, index = minute.index

        // The catalog: 30 days of one stream's 1-minute segments; the last 24 hours are files
        // (hard links of the one minute), the older rows name files retention would have taken.
        let state = work.appendingPathComponent("state")
        let archive = work.appendingPathComponent("archive")
        try FileManager.default.createDirectory(at: archive, withIntermediateDirectories: true)
        let catalogPath = state.appendingPathComponent("catalog.sqlite").path
        // The catalog's tables as serve makes them: serve starts once on the state directory.
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let yaml = "streams:\n  idle: {source: \"testsrc://?size=160x96&fps=5&gop=5\", preview: false}\n"
        let file = state.appendingPathComponent("serve.yaml")
        try ChildProcess.serve(me: me, yaml: yaml, file: file).serve.stop()
        let rows = 43_200, files = 1_440
        let now = Date().timeIntervalSince1970
        let t0 = (now - Double(rows) * 60).rounded(.down)
        for i in 0..<files {
            try FileManager.default.linkItem(atPath: one, toPath: archive.appendingPathComponent(String(format: "cam-%05d.mp4", rows - files + i)).path)
        }
        let sql = """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows - 1))
            INSERT INTO segments (stream, path, start, duration, bytes, codecs, sha256, chain, fragment_index, span)
            SELECT 'cam', CASE WHEN i >= \(rows - files) THEN '\(archive.path)/cam-' || printf('%05d', i) || '.mp4' ELSE '\(archive.path)/gone-' || i || '.mp4' END,
                   \(t0) + i * 60, 60, \(bytes), 'h264', '\(sha)', 'bench', X'\(index)', 1 FROM n;
            COMMIT;
            """
        let loaded = try ChildProcess.run("/usr/bin/sqlite3", [catalogPath, sql], timeout: 120)
        guard loaded.status == 0 else { throw BenchError("sqlite3: \(loaded.stderr)") }

        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: file)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        let iso = ISO8601DateFormatter()
        func at(_ t: Double) -> String { iso.string(from: Date(timeIntervalSince1970: t)) }
        var notes: [String] = []
        var table: [String] = []

        // Listing 30 days.
        let listURL = "\(base)/api/recordings/cam?start=\(at(t0 - 60))&end=\(at(now + 60))"
        _ = try Self.curl(listURL)
        var listing: [Double] = []
        var listBytes = 0
        for _ in 0..<20 { let r = try Self.curl(listURL); listing.append(r.total * 1000); listBytes = r.bytes }
        let l = Self.timing(listing)
        table.append("| list 30 days (43,200 segments) | `GET /api/recordings/cam?start=…&end=…` | \(ms(l.p50)) | \(ms(l.max)) | \(l.n) | \(listBytes) B answer, whole |")

        // Playback and export: ranges anywhere in the last 24 hours, each file read cold once
        // (the plan comes from the catalog's fragment index).
        let dayStart = t0 + Double(rows - files) * 60
        var rng = SystemRandomNumberGenerator()
        func randomStart(_ length: Double) -> Double { dayStart + Double.random(in: 0..<(Double(files) * 60 - length - 1), using: &rng) }
        var playlistFirst: [Double] = [], exportFirst: [Double] = [], exportHourFirst: [Double] = []
        for _ in 0..<10 {
            let s = randomStart(3600)
            playlistFirst.append(try Self.curl("\(base)/streams/cam/recording.m3u8?start=\(at(s))&end=\(at(s + 3600))").first * 1000)
            let e = randomStart(70)
            exportFirst.append(try Self.curl("\(base)/streams/cam/recording.mp4?start=\(at(e))&duration=70", range: "0-65535").first * 1000)
            let h = randomStart(3600)
            exportHourFirst.append(try Self.curl("\(base)/streams/cam/recording.mp4?start=\(at(h))&duration=3600", range: "0-65535").first * 1000)
        }
        let p = Self.timing(playlistFirst), e = Self.timing(exportFirst), eh = Self.timing(exportHourFirst)
        table.append("| playback: first byte of a 1 h playlist, random ranges | `GET /streams/cam/recording.m3u8?start=…&end=…` | \(ms(p.p50)) | \(ms(p.max)) | \(p.n) | |")
        table.append("| export: first byte of a 70 s clip, random ranges | `GET /streams/cam/recording.mp4?start=…&duration=70` | \(ms(e.p50)) | \(ms(e.max)) | \(e.n) | |")
        table.append("| export: first byte of a 1 h clip, random ranges | `…recording.mp4?start=…&duration=3600` | \(ms(eh.p50)) | \(ms(eh.max)) | \(eh.n) | |")
        let dayList = try Self.curl("\(base)/streams/cam/recording.m3u8?start=\(at(dayStart))&end=\(at(dayStart + Double(files) * 60))")
        table.append("| playback: first byte of the whole 24 h playlist | `…recording.m3u8` over 24 h | \(ms(dayList.first * 1000)) | | 1 | \(dayList.bytes) B |")
        let dayClip = try Self.curl("\(base)/streams/cam/recording.mp4?start=\(at(dayStart))&duration=86000", range: "0-65535")
        table.append("| export: first byte of a 24 h clip | `…recording.mp4?duration=86000` | \(ms(dayClip.first * 1000)) | | 1 | |")
        // Export speed: a whole hour downloaded.
        let hs = randomStart(3600)
        let hour = try Self.curl("\(base)/streams/cam/recording.mp4?start=\(at(hs))&duration=3600")
        let speed = 3600 / max(hour.total, 0.001)
        table.append("| export: a 1 h clip downloaded whole | `curl -o /dev/null …recording.mp4?duration=3600` | \(ms(hour.first * 1000)) | \(ms(hour.total * 1000)) total | 1 | \(hour.bytes / 1_048_576) MiB, **\(Int(speed))× real time** (\(Int(Double(hour.bytes) / max(hour.total, 0.001) / 1_048_576)) MiB/s) |")
        serve.stop()

        // Recording CPU: N streams of the clip looped in real time, recorded in 1-minute files,
        // against N ffmpeg -re -stream_loop -1 -c copy -f segment (fragmented MP4, as crash-safe).
        var cpuRows: [String] = []
        for n in counts {
            let rec = work.appendingPathComponent("rec-\(n)")
            var y = "streams:\n"
            for i in 0..<n {
                y += "  s\(i): {source: \(one), realtime: true, loop: true, preview: false, record: {path: \(rec.path), segment_duration: 60s}}\n"
            }
            let (ours, ourPort) = try ChildProcess.serve(me: me, yaml: y, file: work.appendingPathComponent("rec-\(n).yaml"))
            var peers: [ChildProcess] = []
            if peer {
                let dir = work.appendingPathComponent("ffmpeg-\(n)")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                for i in 0..<n {
                    peers.append(try ChildProcess(name: "ffmpeg-\(i)", "/usr/bin/ffmpeg", [
                        "-v", "error", "-re", "-stream_loop", "-1", "-i", one, "-c", "copy", "-f", "segment", "-segment_time", "60",
                        "-segment_format", "mp4", "-segment_format_options", "movflags=+frag_keyframe+empty_moov+default_base_moof",
                        "-reset_timestamps", "0", dir.appendingPathComponent("s\(i)-%05d.mp4").path]))
                }
            }
            Thread.sleep(forTimeInterval: 4)
            let d0 = Self.recordCounts(port: ourPort)
            let c0 = ours.cpuSeconds, p0 = peers.map(\.cpuSeconds), w0 = Date()
            Thread.sleep(forTimeInterval: seconds)
            let wall = Date().timeIntervalSince(w0)
            let oursCPU = (ours.cpuSeconds - c0) / wall * 100 / Double(n)
            let peerCPU = zip(peers.map(\.cpuSeconds), p0).map { $0 - $1 }.reduce(0, +) / wall * 100 / Double(n)
            let d1 = Self.recordCounts(port: ourPort)
            let running = peers.filter { $0.process.isRunning }.count
            ours.stop()
            for p in peers { p.stop() }
            let ratio = peer ? String(format: "%.2f", oursCPU / max(peerCPU, 0.0001)) : ""
            cpuRows.append("| \(n) | LiveRelay: file looped in real time → record (1 min fMP4, 1 s fragments) | \(f(oursCPU)) | \(ratio) | \(d1.dropped - d0.dropped) of \(d1.received - d0.received) packets | \(d1.recording) of \(n) recording |")
            if peer { cpuRows.append("| \(n) | \(n) × ffmpeg -re -stream_loop -1 -c copy -f segment (fMP4) | \(f(peerCPU)) | | | \(running) of \(n) running |") }
            try? FileManager.default.removeItem(at: rec)
            try? FileManager.default.removeItem(at: work.appendingPathComponent("ffmpeg-\(n)"))
        }

        notes.append("Every row carries its fragment index as the recorder stores it (the catalog's `fragment_index`): plans read no file but the clip's first init section.")
        notes.append("The 24 h recording is 1,440 hard links of one 60 s fragmented MP4 (640x360, 30 fps, 1 Mbit/s, 1 s GOPs, \(bytes / 1024) KiB), catalogued with 41,760 older rows whose files are gone (as retention leaves them): \(rows) rows in all.")
        notes.append("First byte: curl's time_starttransfer; export first bytes ask for the first 64 KiB (`-r 0-65535`), which needs the whole clip's plan (every piece's length) first.")
        var md = "Recordings, \(ProcessInfo.processInfo.activeProcessorCount) cores, debug or release as built.\n\n"
        md += "| what | request | p50 ms | max ms | n | notes |\n|---|---|---:|---:|---:|---|\n" + table.joined(separator: "\n") + "\n\n"
        md += "| streams | path | CPU % per stream | LiveRelay / ffmpeg CPU | record drops | running |\n|---:|---|---:|---:|---|---|\n" + cpuRows.joined(separator: "\n") + "\n\n"
        md += notes.map { "- \($0)" }.joined(separator: "\n") + "\n"
        print(md)
        try md.write(to: outDir.appendingPathComponent("recordings.md"), atomically: true, encoding: .utf8)
    }

    /// Over every stream's record output: packets taken, dropped, and how many are recording.
    static func recordCounts(port: Int) -> (received: Int, dropped: Int, recording: Int) {
        guard let data = ChildProcess.httpBody("http://127.0.0.1:\(port)/api/streams"),
              let list = try? RelayAPI.decode([StreamView].self, from: data) else { return (0, 0, 0) }
        var received = 0, dropped = 0, recording = 0
        for s in list {
            for sink in s.sinks where sink.kind == .record {
                received += sink.counters.received
                dropped += sink.counters.droppedTotal
                if sink.state == .running { recording += 1 }
            }
        }
        return (received, dropped, recording)
    }

    func ms(_ v: Double) -> String { String(format: v < 10 ? "%.1f" : "%.0f", v) }
    func f(_ v: Double) -> String { v < 10 ? String(format: "%.2f", v) : String(format: "%.0f", v) }
}

/// One minute as the recorder writes it (640x360, 30 fps, 1 Mbit/s, 1 s GOPs, a fragment at
/// each keyframe, made by ffmpeg), with what the catalog keeps of it: its size, SHA-256 and
/// fragment index. Benches build archives of hard links of it.
struct RecordedMinute {
    var path: String
    var bytes: Int
    var sha256: String
    /// The fragment index as the catalog's hex blob.
    var index: String

    init(in work: URL) throws {
        path = work.appendingPathComponent("one.mp4").path
        let made = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "60",
                                                            "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-b:v", "1000k", "-pix_fmt", "yuv420p",
                                                            "-movflags", "+frag_keyframe+empty_moov+default_base_moof", path], timeout: 300)
        guard made.status == 0 else { throw BenchError("ffmpeg could not make \(path): \(made.stderr)") }
        bytes = ((try FileManager.default.attributesOfItem(atPath: path))[.size] as? NSNumber)?.intValue ?? 0
        guard let sha = RecordedSegment.hash(file: path) else { throw BenchError("cannot hash \(path)") }
        sha256 = sha
        do { index = SHA256Stream.hexString(SegmentIndex(try RecordedFileIndex.read(path: path)).encoded()) } catch { throw BenchError("\(path): \(error)") }
    }
}

