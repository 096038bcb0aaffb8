public import MediaCore
public import Demux
public import Decode
import Foundation

/// Decode throughput of LiveRelay's own path (demux + decode, no output) on a file.
public enum DecodeBenchmark {
    public struct Result: Sendable {
        public var frames: Int
        public var wallSeconds: Double
        public var cpuSeconds: Double
        public var fps: Double { wallSeconds > 0 ? Double(frames) / wallSeconds : 0 }
    }

    /// Decodes every frame of `file` as fast as possible with `threads` slice threads.
    public static func run(file: String, threads: Int) throws -> Result {
        let session = try IngestSession(url: file)
        guard let video = session.videoStream else {
            throw IngestError(.noVideoStream, source: file, stage: "probing streams", detail: "no video stream")
        }
        var options = DecoderOptions()
        options.hardware = .none
        options.sliceThreads = threads
        let decoder = try VideoDecoder(stream: video, options: options)
        let cpu0 = cpuSeconds()
        let t0 = MonotonicClock.nanoseconds()
        var frames = 0
        while let p = try session.readPacket() {
            guard p.streamIndex == video.index else { continue }
            frames += decoder.decode(p).count
        }
        decoder.sendEndOfStream()
        frames += decoder.drain().count
        return Result(frames: frames, wallSeconds: Double(MonotonicClock.nanoseconds() - t0) / 1e9, cpuSeconds: cpuSeconds() - cpu0)
    }

    /// User + system CPU time of this process, seconds.
    public static func cpuSeconds() -> Double {
        var u = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &u)
        return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
    }
}
