public import Logging
import Demux
import Foundation

/// Every configured stream with all of its outputs (preview, HLS with its directory and push,
/// recording, forwards), wired here: the engine behind `liverelay serve`, embeddable in another
/// Swift program without HTTP, and then missing nothing.
public final class RelayEngine: Sendable {
    public let configuration: Configuration
    public let hubs: [String: StreamHub]
    /// Where publishers on the one-port ingest meet their streams.
    public let publishPoints: PublishPoints
    /// HLS upload ingest (`PUT /ingest/{stream}/{file}`), into the same publish points.
    public let hlsUploads: HLSUploads
    /// Every stream's state changes, for subscribers (`/api/events`).
    public let events = StreamEventBus()

    /// - Parameters:
    ///   - sources: how URLs are opened (the program registers its own schemes, e.g. `testsrc`).
    ///   - captureAge: read on streams configured with `measure: true`.
    public init(configuration: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil, logger: Logger) {
        self.configuration = configuration
        let points = PublishPoints(streams: Set(configuration.publishStreams.map(\.name)))
        publishPoints = points
        hlsUploads = HLSUploads(points: points)
        var hubs: [String: StreamHub] = [:]
        for s in configuration.streams {
            // A publish stream opens by waiting for its publisher on the one-port ingest.
            var sources = sources
            let options = s.sourceOptions
            sources.register(scheme: PublishPoints.scheme, open: { url, handle throws(IngestError) in
                try points.open(url: url, options: options, interrupt: handle)
            }, validate: { _ in nil })
            var l = logger
            l[metadataKey: "stream.name"] = "\(s.name)"
            let hub = StreamHub(name: s.name, source: s.source, title: s.title, sourceOptions: s.sourceOptions,
                                decoderOptions: s.decoderOptions, opener: sources, captureAge: s.measure ? captureAge : nil,
                                events: events, logger: l)
            hubs[s.name] = hub
            // Each output registers itself with its hub.
            if let p = s.preview { _ = PreviewService(hub: hub, settings: p) }
            if let h = s.hls { _ = HLSSegmenter(hub: hub, settings: h, logger: l) }
            if let r = s.record { _ = Recorder(hub: hub, settings: r, logger: l) }
            for (i, destination) in s.forward.enumerated() { _ = Forwarder(hub: hub, index: i, destination: destination, logger: l) }
        }
        self.hubs = hubs
    }

    /// The outputs of a stream of one type (e.g. `engine.outputs("cam", PreviewService.self)`).
    public func outputs<T>(_ stream: String, _ type: T.Type) -> [T] {
        hubs[stream]?.outputs.compactMap { $0 as? T } ?? []
    }

    public func preview(_ stream: String) -> PreviewService? { outputs(stream, PreviewService.self).first }
    public func hls(_ stream: String) -> HLSSegmenter? { outputs(stream, HLSSegmenter.self).first }
    public func recorder(_ stream: String) -> Recorder? { outputs(stream, Recorder.self).first }
    public func forwarders(_ stream: String) -> [Forwarder] { outputs(stream, Forwarder.self) }

    /// Starts every output, then every ingest.
    public func start() {
        for h in hubs.values { for o in h.outputs { o.start() } }
        for h in hubs.values { h.start() }
    }

    /// Stops every stream (each ingest returns within its deadlines), then lets each output
    /// finish: every packet taken is segmented or recorded, playlists end. Suspends; blocks no
    /// thread.
    public func stop() async {
        await withTaskGroup(of: Void.self) { g in
            for h in hubs.values { g.addTask { await h.stop() } }
        }
        await withTaskGroup(of: Void.self) { g in
            for h in hubs.values { for o in h.outputs { g.addTask { await o.stop() } } }
        }
        events.finish()
    }

    /// Subscribes to a stream's decoded frames with a policy of your own: the in-process API.
    /// Iterate the subscription; `cancel()` it when done.
    public func subscribe(stream: String, name: String, policy: SinkPolicy = .preview) -> FrameSubscription? {
        guard let hub = hubs[stream] else { return nil }
        return FrameSubscription(hub: hub, name: name, policy: policy)
    }
}
