public import MediaCore
import Wire
public import Demux
public import Decode
import Foundation
public import Mux

/// What `liverelay probe` found.
public struct ProbeReport: Sendable, Codable {
    public struct Stream: Sendable, Codable {
        public var index: Int
        public var mediaType: String
        public var codec: String
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var timeBase: String
        public var sampleRate: Int?
        public var channels: Int?
    }

    public var source: String
    public var container: String
    public var transport: String?
    public var streams: [Stream]
    public var codec: String
    public var width: Int
    public var height: Int
    public var frameRate: Double?
    public var decoderPath: String
    public var fallbackReason: String?
    public var framesRequested: Int
    public var framesDecoded: Int
    public var corruptPackets: Int
    public var corruptFrames: Int
    public var decodeFps: Double
    public var openMs: Double
    public var timeToFirstFrameMs: Double?
    public var stampsRead: Int
    public var latencyP50Ms: Double?
    public var latencyP99Ms: Double?
    public var latencyMaxMs: Double?
    public var unusedOptions: [String]
    /// The encoder a rendition of this source would take here (`renditions`), and why not a
    /// hardware one.
    public var encoder: EncoderChoice?
}

/// Opens a source, decodes some frames and reports what it saw: the engine behind
/// `liverelay probe`.
public struct Prober: Sendable {
    public var url: String
    public var sourceOptions: SourceOptions
    public var decoderOptions: DecoderOptions
    public var frames: Int
    /// How the URL is opened (schemes the program registered, libavformat's).
    public var sources: SourceOpener
    /// Reads capture times from pictures (stamped sources), for capture → decoded latency.
    public var captureAge: CaptureAgeReader?
    /// Which rendition encoders to try (the report says which one opens here).
    public var encoderPreference: EncoderPreference = .auto

    /// Opens a small encoder as a rendition would, and closes it: what this machine offers.
    static func encoderChoice(timeBase: TimeBase, preference: EncoderPreference) -> EncoderChoice? {
        var s = VideoEncoderSettings(width: 320, height: 180, bitrateKbps: 200, fps: 30)
        s.preference = preference
        return (try? VideoEncoder(settings: s, timeBase: timeBase))?.choice
    }

    public init(url: String, sourceOptions: SourceOptions = SourceOptions(), decoderOptions: DecoderOptions = DecoderOptions(), frames: Int = 100,
                sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil) {
        self.url = url
        self.sources = sources
        self.captureAge = captureAge
        self.sourceOptions = sourceOptions
        self.decoderOptions = decoderOptions
        self.frames = frames
    }

    /// Runs the probe on the calling thread (it blocks, within the source's deadlines).
    /// - Parameter handle: interrupt it from another thread to stop early.
    public func run(handle: InterruptHandle = InterruptHandle()) throws -> ProbeReport {
        let start = MonotonicClock.nanoseconds()
        let source = try sources.open(url: url, options: sourceOptions, interruptHandle: handle)
        let opened = MonotonicClock.nanoseconds()
        guard let video = source.videoStream else {
            throw IngestError(.noVideoStream, source: url, stage: "probing streams",
                              detail: "found \(source.streams.map { "\($0.mediaType.rawValue) (\($0.codecName))" }.joined(separator: ", ").ifEmpty("no streams"))")
        }
        let decoder = try VideoDecoder(stream: video, options: decoderOptions)
        var decoded = 0
        var firstFrameAt: UInt64?
        var decodeNanos: UInt64 = 0
        var latencies: [Double] = []
        /// Runs one decoder call, timing it, and takes at most the frames still wanted.
        func take(_ decode: () -> [Frame]) {
            let t0 = MonotonicClock.nanoseconds()
            let out = decode()
            decodeNanos += MonotonicClock.nanoseconds() - t0
            for frame in out.prefix(max(0, frames - decoded)) {
                decoded += 1
                if firstFrameAt == nil { firstFrameAt = MonotonicClock.nanoseconds() }
                if let age = captureAge?(frame) { latencies.append(age) }
            }
        }
        while decoded < frames {
            guard let packet = try source.readPacket() else {
                decoder.sendEndOfStream()
                take { decoder.drain() }
                break
            }
            guard packet.streamIndex == video.index else { continue }
            take { decoder.decode(packet) }
        }
        latencies.sort()
        let session = source as? IngestSession
        return ProbeReport(
            source: Redactor.redact(url),
            container: source.formatName,
            transport: (source as? any RTSPTransportReporting)?.transportUsed?.rawValue,
            streams: source.streams.map { s in
                ProbeReport.Stream(index: s.index, mediaType: s.mediaType.rawValue, codec: s.codecName,
                                   width: s.mediaType == .video ? s.width : nil, height: s.mediaType == .video ? s.height : nil,
                                   frameRate: s.frameRate, timeBase: s.timeBase.description,
                                   sampleRate: s.mediaType == .audio ? s.parameters.sampleRate : nil,
                                   channels: s.mediaType == .audio ? s.parameters.channels : nil)
            },
            codec: video.codecName, width: video.width, height: video.height, frameRate: video.frameRate,
            decoderPath: decoder.path.rawValue, fallbackReason: decoder.fallbackReason,
            framesRequested: frames, framesDecoded: decoded,
            corruptPackets: decoder.counters.corruptPackets, corruptFrames: decoder.counters.corruptFrames,
            decodeFps: decodeNanos > 0 ? Double(decoded) / (Double(decodeNanos) / 1e9) : 0,
            openMs: Double(opened - start) / 1e6,
            timeToFirstFrameMs: firstFrameAt.map { Double($0 - start) / 1e6 },
            stampsRead: latencies.count,
            latencyP50Ms: Percentiles.of(latencies, 0.50),
            latencyP99Ms: Percentiles.of(latencies, 0.99),
            latencyMaxMs: latencies.last,
            unusedOptions: session?.unusedOptions ?? [],
            encoder: Self.encoderChoice(timeBase: video.timeBase, preference: encoderPreference)
        )
    }
}

/// Nearest-rank percentiles over a sorted sample.
public enum Percentiles {
    public static func of(_ sorted: [Double], _ q: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int(saturating: (q * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
