import ArgumentParser
import Bench

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure LiveRelay against peers in the same run.",
        subcommands: [DecodeBench.self, LatencyBench.self, ThroughputBench.self, IngestBench.self, AccessBench.self, WallBench.self, TilesBench.self, FaultsBench.self, RecordingsBench.self, EdgeBench.self, FleetBench.self, RenditionsBench.self, WebRTCBench.self, HEVCBench.self, PTZBench.self, TalkBench.self, IncidentBench.self]
    )
}

struct DecodeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode throughput against `ffmpeg -benchmark` on the same files and thread count."
    )

    @Option(help: "Files to decode (default: 720p and 1080p H.264 clips made with ffmpeg's testsrc2).")
    var file: [String] = []

    @Option(help: "Decoder threads (slice threads for LiveRelay, -threads for ffmpeg).")
    var threads: Int = 1

    @Option(help: "Runs of each, alternating; the median is reported.")
    var runs: Int = 3

    @Option(help: "Seconds of video in the generated clips.")
    var seconds: Int = 20

    @Option(help: "Where generated clips go.")
    var out: String = "./bench-results"

    func run() throws {
        var b = DecodeBenchComparison()
        b.file = file
        b.threads = threads
        b.runs = runs
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

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

    @Option(name: .customLong("late-keyframe"), help: "Every Nth keyframe of the test source comes a GOP late (an irregular GOP: HLS target durations, players' distance to the edge).")
    var lateKeyframe = 0

    @Option(name: .customLong("wall-rendition"), help: "Give each of the wall's 16 camera streams a rendition of this height (its tiles play it).")
    var wallRendition: Int?

    @Option(help: "Add a stream with a rendition of this height, read through the rendition and through the source (RTSP out; LL-HLS in hls.js).")
    var rendition: Int?

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = LatencyBenchmark()
        b.wallRendition = wallRendition
        b.rendition = rendition
        b.quick = quick
        b.seconds = seconds
        b.size = size
        b.fps = fps
        b.gop = gop
        b.bitrate = bitrate
        b.scenarios = scenarios
        b.impair = impair
        b.lateKeyframe = lateKeyframe
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct ThroughputBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throughput",
        abstract: "CPU and memory per stream for N streams: LiveRelay next to N ffmpeg processes."
    )

    @Option(help: "Stream counts to sweep (comma-separated).")
    var streams = "1,8,32,64"

    @Option(help: "Seconds measured per point.")
    var seconds: Double = 20

    @Option(help: "The input (default: a 640x360 30 fps H.264 clip made with ffmpeg's testsrc2).")
    var file: String?

    @Flag(help: "Also measure decode + preview (MJPEG at 15 fps) per stream.")
    var decode = false

    @Option(help: "Runs per remux point (the table shows the median; the notes every ratio).")
    var repeats = 1

    @Option(help: "Where the remux rows' streams come from: file (the input looped in real time, `-re` for ffmpeg), rtmp (N publishers of the input into nginx-rtmp, pulled by both), or both.")
    var sources = "file,rtmp"

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = ThroughputBenchmark()
        b.streams = streams
        b.seconds = seconds
        b.file = file
        b.decode = decode
        b.repeats = repeats
        b.sources = sources
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct IngestBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "N RTMP publishers (an in-process load generator) into LiveRelay's one-port ingest, next to nginx-rtmp + N ffmpeg -c copy -f hls."
    )

    @Option(help: "Publisher counts to sweep (comma-separated).")
    var publishers = "8,64,256"

    @Option(help: "Seconds measured per point.")
    var seconds: Double = 15

    @Flag(help: "Skip the nginx-rtmp + ffmpeg peer.")
    var noPeer = false

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = IngestBenchmark()
        b.publishers = publishers
        b.seconds = seconds
        b.peer = !noPeer
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct FaultsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: "A camera killed and restarted N times (recovery after it returns; descriptors, threads, memory), and a source without keyframes (memory, HLS on time)."
    )

    @Option(help: "Restart cycles.")
    var cycles = 20

    @Option(help: "Outages in seconds, used in turn (comma-separated).")
    var outages = "1,1,1,1,8"

    @Option(help: "Seconds of the keyframe-less source (0: skip).")
    var keyframeless: Double = 60

    @Option(help: "Seconds of the soak: streams, viewers joining and leaving every second (0: skip).")
    var soak: Double = 0

    @Option(name: .customLong("soak-streams"), help: "Streams in the soak.")
    var soakStreams = 16

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = FaultsBenchmark()
        b.cycles = cycles
        b.outages = outages
        b.keyframeless = keyframeless
        b.soak = soak
        b.soakStreams = soakStreams
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct AccessBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "access",
        abstract: "What authentication and TLS cost on the preview and LL-HLS paths (h2load, same run)."
    )

    @Option(help: "Requests per path and setting.")
    var requests = 2000

    @Option(help: "Concurrent clients.")
    var clients = 8

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = AccessBenchmark()
        b.requests = requests
        b.clients = clients
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct WallBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wall",
        abstract: "What a watched ops-wall tile costs the server and the wire: H.264 as received, JPEG, MJPEG (same run)."
    )

    @Option(help: "Streams, each watched by one viewer.")
    var streams = 8

    @Option(help: "Seconds per path.")
    var seconds = 10.0

    @Option(help: "Bitrate of the camera, kbit/s.")
    var bitrate = 2000

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = WallBenchmark()
        b.streams = streams
        b.seconds = seconds
        b.bitrate = bitrate
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct TilesBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tiles",
        abstract: "The ops wall at N tiles in Chromium: cameras with a main and a sub stream, the tiles on the sub stream and overloaded on the main one, against ffmpeg's direct read (same run); the selected tile's switch."
    )

    @Option(help: "Tile counts, comma-separated.")
    var tiles = "16,36"

    @Option(help: "Seconds measured per wall.")
    var seconds = 12.0

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = TilesBenchmark()
        b.tiles = tiles.split(separator: ",").compactMap { Int($0) }.filter { (1...64).contains($0) }
        guard !b.tiles.isEmpty else { throw ValidationError("--tiles: expected counts from 1 to 64 such as 16,36") }
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct WebRTCBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webrtc",
        abstract: "WHEP capture → screen in Chromium against the ops wall's tile and ffmpeg's direct read (same run); server CPU per WHEP viewer."
    )

    @Option(help: "Rounds of each reader, taking turns.")
    var rounds = 3

    @Option(help: "Seconds per reader and per cost phase.")
    var seconds = 8.0

    @Option(help: "WHEP viewers (GStreamer webrtcbin, no decoding) for the cost phase; 0 skips it.")
    var viewers = 20

    @Option(help: "Light WHEP viewers of the bench's own (ICE, DTLS, SRTP decrypted and counted) for a load phase: 20 of them, then this many; 0 skips it.")
    var load = 0

    @Option(help: "Rounds of WHIP publish (Chromium's fake camera) → first picture on the ops wall; 0 skips it.")
    var whip = 0

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = WebRTCBenchmark()
        b.whip = whip
        b.rounds = rounds
        b.seconds = seconds
        b.viewers = viewers
        b.load = load
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct RecordingsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordings",
        abstract: "The archive: listing 30 days, first byte of playback and export over 24 h, export speed; recording CPU against ffmpeg -c copy -f segment."
    )

    @Option(help: "Stream counts for the recording CPU rows (comma-separated).")
    var streams = "8,64"

    @Option(help: "Seconds measured per recording point.")
    var seconds: Double = 20

    @Flag(help: "Skip the ffmpeg peer.")
    var noPeer = false

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = RecordingsBenchmark()
        b.streams = streams
        b.seconds = seconds
        b.peer = !noPeer
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct EdgeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edge",
        abstract: "LL-HLS through the shipped nginx edge: hls.js through it and direct, then N simulated players: origin requests per part and origin CPU."
    )

    @Option(help: "Player counts (comma-separated); 0 measures the origin with no player.")
    var viewers = "0,100,1000"

    @Option(help: "Seconds measured per point.")
    var seconds: Double = 20

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = EdgeBenchmark()
        b.viewers = viewers
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct FleetBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Catalog traffic of a fleet: N nodes on one PostgreSQL lease M cameras; transactions per second while nothing changes and while a killed node's cameras move."
    )

    @Option(help: "Nodes.")
    var nodes = 3

    @Option(help: "Cameras (mounts of one gst-rtsp-server).")
    var cameras = 64

    @Option(help: "Seconds measured while nothing changes.")
    var seconds: Double = 30

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = FleetBenchmark()
        b.nodes = nodes
        b.cameras = cameras
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct RenditionsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "renditions",
        abstract: "CPU of a 720p camera's 360p + 240p ladder: LiveRelay (nothing watched, both watched) against one ffmpeg doing the same ladder."
    )

    @Option(help: "Seconds measured per point.")
    var seconds: Double = 20

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = RenditionsBenchmark()
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct HEVCBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hevc",
        abstract: "An H.265 camera through each path next to an H.264 camera, each against ffmpeg's direct read; the H.264 fallback's CPU against one ffmpeg transcode."
    )

    @Option(help: "Rounds of readers taking turns (the table shows each round and the median).")
    var rounds = 3

    @Option(help: "Only these paths (comma-separated: rtsp, llhls, wall, whep-chromium, whep-gst); ffmpeg's direct read is always measured.")
    var only: String?

    @Option(help: "Seconds each reader is measured.")
    var seconds: Double = 8

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = HEVCBenchmark()
        b.rounds = rounds
        b.only = only.map { Set($0.split(separator: ",").map(String.init)) }
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct PTZBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ptz",
        abstract: "PTZ commands through LiveRelay's API to an ONVIF camera (ipycam behind a timestamping proxy): API → camera, against the same SOAP call sent straight to it."
    )

    @Option(help: "Commands sent (moves and stops in turn).")
    var commands = 200

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = PTZBenchmark()
        b.commands = commands
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct TalkBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "talk",
        abstract: "Talk back, mouth to camera: Chromium's push-to-talk on the wall through LiveRelay to GStreamer's ONVIF camera's backchannel, against GStreamer talking to it straight; the talk session's CPU."
    )

    @Option(help: "Seconds of talk (a click every 500 ms).")
    var seconds: Double = 10

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = TalkBenchmark()
        b.seconds = seconds
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}

struct IncidentBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "incident",
        abstract: "An incident reviewed in step and exported: four stamped cameras' tiles read off the review page's pixels (spread at one moment, paused, 1×, 4×), the first picture after a seek, the evidence bundle of 4 × 10 min and 16 × 1 h against real time with serve's memory."
    )

    @Option(help: "Seconds the four cameras record before the review.")
    var seconds: Double = 40

    @Option(help: "Seeks while paused.")
    var seeks = 12

    @Flag(help: "Leave out the 16 cameras × 1 hour scale check.")
    var noScale = false

    @Option(help: "Where results go.")
    var out = "./bench-results"

    func run() throws {
        var b = IncidentBenchmark()
        b.seconds = seconds
        b.seeks = seeks
        b.scale = !noScale
        b.out = out
        do { try b.run() } catch let e as BenchError { throw ValidationError(e.description) }
    }
}
