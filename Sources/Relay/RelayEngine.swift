public import Logging
import Foundation

/// Every configured stream with its hub and preview: the engine behind `liverelay serve`,
/// embeddable in another Swift program without HTTP.
public final class RelayEngine: Sendable {
    public let configuration: Configuration
    public let hubs: [String: StreamHub]
    public let previews: [String: PreviewService]
    public let hls: [String: HLSSegmenter]
    public let recorders: [String: Recorder]
    public let forwarders: [String: [Forwarder]]

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        var hubs: [String: StreamHub] = [:]
        var previews: [String: PreviewService] = [:]
        var hls: [String: HLSSegmenter] = [:]
        var recorders: [String: Recorder] = [:]
        var forwarders: [String: [Forwarder]] = [:]
        for s in configuration.streams {
            var l = logger
            l[metadataKey: "stream.name"] = "\(s.name)"
            let hub = StreamHub(name: s.name, source: s.source, title: s.title, sourceOptions: s.sourceOptions,
                                decoderOptions: s.decoderOptions, logger: l)
            hubs[s.name] = hub
            if let p = s.preview { previews[s.name] = PreviewService(hub: hub, settings: p) }
            if let h = s.hls {
                let segmenter = HLSSegmenter(hub: hub, settings: h, logger: l)
                if let dir = h.directory {
                    do {
                        let writer = try HLSDirectoryWriter(directory: dir, logger: l)
                        segmenter.store.addOutput { writer.handle($0) }
                    } catch {
                        l.error("hls: cannot use the directory; HLS is served over HTTP only", metadata: ["directory": "\(dir)", "error": "\(error)"])
                    }
                }
                hls[s.name] = segmenter
            }
            if let r = s.record { recorders[s.name] = Recorder(hub: hub, settings: r, logger: l) }
            forwarders[s.name] = s.forward.enumerated().map { Forwarder(hub: hub, index: $0.offset, destination: $0.element, logger: l) }
        }
        self.hls = hls
        self.recorders = recorders
        self.forwarders = forwarders
        self.hubs = hubs
        self.previews = previews
    }

    public func start() {
        for p in previews.values { p.start() }
        for h in hls.values { h.start() }
        for r in recorders.values { r.start() }
        for f in forwarders.values.joined() { f.start() }
        for h in hubs.values { h.start() }
    }

    /// Stops every stream; each ingest returns within its deadlines.
    public func stop() {
        let group = DispatchGroup()
        for h in hubs.values {
            DispatchQueue.global().async(group: group) { h.stop() }
        }
        _ = group.wait(timeout: .now() + 5)
        for p in previews.values { p.stop() }
        // After the ingests: every packet taken is segmented, then the playlists end.
        let sinks = DispatchGroup()
        for h in hls.values { DispatchQueue.global().async(group: sinks) { h.stop() } }
        for r in recorders.values { DispatchQueue.global().async(group: sinks) { r.stop() } }
        for f in forwarders.values.joined() { DispatchQueue.global().async(group: sinks) { f.stop() } }
        _ = sinks.wait(timeout: .now() + 5)
    }

    /// Subscribes to a stream's decoded frames with a policy of your own: the in-process API.
    /// Iterate `frames`; call `hub.removeSink(name)` when done.
    public func subscribe(stream: String, sink: String, policy: SinkPolicy = .preview) -> FrameSubscription? {
        guard let hub = hubs[stream] else { return nil }
        return FrameSubscription(queue: hub.addFrameSink(sink, policy: policy))
    }
}

/// Decoded frames of one stream as an async sequence, under the subscriber's policy.
public struct FrameSubscription: AsyncSequence, Sendable {
    public typealias Element = MediaCoreFrame
    public let queue: SinkQueue<MediaCoreFrame>
    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: SinkQueue<MediaCoreFrame>
        public mutating func next() async -> MediaCoreFrame? { await queue.next() }
    }
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }
}
