import MediaCore
import Foundation
import Synchronization

/// `liverelay bench latency`: the stamped test source through LiveRelay's paths and through
/// peers (the ffmpeg CLI, nginx-rtmp), all read by the same kind of client in one run: each
/// reader's pictures carry their capture time, read back from the pixels.
public struct LatencyBenchmark {

    /// A small set of scenarios, run side by side, in under a minute.
    public var quick = false

    /// Seconds each scenario is measured.
    public var seconds: Double = 20

    /// Picture size of the test source.
    public var size = "640x360"

    /// Frames per second of the test source.
    public var fps = 30

    /// Keyframe interval of the test source, in frames.
    public var gop = 30

    /// Bitrate of the test source, kbit/s.
    public var bitrate = 1000

    /// Only these scenarios (comma-separated names; see the table).
    public var scenarios: String?

    /// Impair the network between the sources and LiveRelay/readers, e.g. loss=2%,delay=20ms,jitter=10ms,reorder=5% (root: network namespaces).
    public var impair: String?

    /// Every Nth keyframe interval of the test source twice as long (0: a fixed GOP).
    public var lateKeyframe = 0

    /// Where results go.
    public var out = "./bench-results"

    /// A rendition of this height for each of the wall's 16 camera streams; nil: none.
    public var wallRendition: Int?

    /// A stream with a rendition of this height, read through the rendition and through the
    /// source (RTSP out, LL-HLS in hls.js) in the same run; nil: none.
    public var rendition: Int?

    public init() {}

    public func run() throws {
        let impairment = try impair.map { try Impairment(parsing: $0) }
        let wh = size.lowercased().split(separator: "x").compactMap { Int($0) }
        guard wh.count == 2 else { throw BenchError("--size: expected WIDTHxHEIGHT") }
        guard lateKeyframe != 1, lateKeyframe >= 0 else { throw BenchError("--late-keyframe: 0 (off) or 2 and up") }
        let bench = try LatencyRun(width: wh[0], height: wh[1], fps: fps, gop: gop, bitrate: bitrate, lateKeyframe: lateKeyframe, out: out,
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
        bench.wallRendition = wallRendition
        bench.rendition = rendition
        try bench.run()
    }
}

