public import Relay

extension StreamMeta {
    /// The metadata of the engine's stream `name`; nil when it has none.
    public init?(engine: RelayEngine, name: String) {
        guard let s = engine.settings(name) else { return nil }
        // With renditions, players get the ladder (hls.js switches between them).
        self.init(name: name, title: s.title, description: s.description, keywords: s.keywords,
                  preview: engine.preview(name) != nil ? "/streams/\(name)/preview.mjpg" : nil,
                  hls: engine.hls(name) != nil ? "/streams/\(name)/hls/\(s.renditions.isEmpty ? "index" : "master").m3u8" : nil)
    }
}

extension StreamView {
    /// The view of `hub`, a stream of `engine`, now.
    public init(hub: StreamHub, engine: RelayEngine) {
        self.init(stream: hub.currentStatus)
        origin = engine.settings(hub.name)?.madeByAPI == true ? "api" : "config"
        rendition = engine.renditions[hub.name]
        if let p = engine.placement {
            owner = p.owner(of: hub.name)
            node = p.nodeName
        }
        meta = StreamMeta(engine: engine, name: hub.name)
        let outputs = hub.outputs
        sinks = outputs.map(\.status)
        forwards = outputs.compactMap { ($0 as? any ForwardReporting)?.currentStatus }
        recordings = outputs.compactMap { ($0 as? Recorder)?.recordedFiles }.flatMap { $0 }
        hls = outputs.lazy.compactMap { $0 as? HLSSegmenter }.first.map { h in
            let p = h.store.snapshot
            return HLSView(variant: h.store.settings.variant.rawValue, url: "/streams/\(hub.name)/hls/index.m3u8", mediaSequence: p.mediaSequence,
                           segments: p.complete.count, targetDuration: p.targetDuration, ended: p.ended,
                           availability: h.store.availability.summary, push: h.pusher?.stats, directory: h.directoryWriter?.status)
        }
    }
}
