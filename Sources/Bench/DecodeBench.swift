import MediaCore
import Foundation

/// `liverelay bench decode`: decode throughput against `ffmpeg -benchmark` on the same files and thread count.
public struct DecodeBenchComparison {
    /// Files to decode (default: 720p and 1080p H.264 clips made with ffmpeg's testsrc2).
    public var file: [String] = []

    /// Decoder threads (slice threads for LiveRelay, -threads for ffmpeg).
    public var threads: Int = 1

    /// Runs of each, alternating; the median is reported.
    public var runs: Int = 3

    /// Seconds of video in the generated clips.
    public var seconds: Int = 20

    /// Where generated clips go.
    public var out: String = "./bench-results"

    public init() {}

    public func run() throws {
        FFmpegLog.silence()
        var files = file
        if files.isEmpty {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            for (w, h) in [(1280, 720), (1920, 1080)] {
                let path = "\(out)/testsrc2-\(h)p.mp4"
                if !FileManager.default.fileExists(atPath: path) {
                    print("making \(path) …")
                    let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(w)x\(h):rate=30",
                                                              "-t", String(seconds), "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p", path])
                    guard r.status == 0 else { throw BenchError("ffmpeg could not make \(path): \(r.stderr)") }
                }
                files.append(path)
            }
        }
        print("| file | frames | LiveRelay fps | ffmpeg fps | LiveRelay / ffmpeg | LiveRelay CPU s | ffmpeg CPU s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for f in files {
            var ours: [DecodeBenchmark.Result] = []
            var theirs: [(fps: Double, cpu: Double, frames: Int)] = []
            for _ in 0..<runs {
                ours.append(try DecodeBenchmark.run(file: f, threads: threads))
                theirs.append(try ffmpegDecode(f))
            }
            let o = ours.sorted { $0.fps < $1.fps }[ours.count / 2]
            let t = theirs.sorted { $0.fps < $1.fps }[theirs.count / 2]
            print(String(format: "| %@ | %d | %.0f | %.0f | %.3f | %.2f | %.2f |", (f as NSString).lastPathComponent, o.frames, o.fps, t.fps, o.fps / t.fps, o.cpuSeconds, t.cpu))
        }
    }

    func ffmpegDecode(_ file: String) throws -> (fps: Double, cpu: Double, frames: Int) {
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-nostats", "-benchmark", "-threads", String(threads), "-i", file, "-map", "0:v:0", "-f", "null", "-"])
        guard r.status == 0 else { throw BenchError("ffmpeg failed: \(r.stderr)") }
        // "bench: utime=1.234s stime=0.012s rtime=1.250s"
        func value(_ key: String) -> Double {
            guard let range = r.stderr.range(of: key + "=") else { return 0 }
            return Double(r.stderr[range.upperBound...].prefix { $0 != "s" }) ?? 0
        }
        var frames = 0
        if let fr = r.stderr.range(of: "frame=", options: .backwards) {
            frames = Int(r.stderr[fr.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }) ?? 0
        }
        let rtime = value("rtime")
        return (rtime > 0 ? Double(frames) / rtime : 0, value("utime") + value("stime"), frames)
    }
}
