import Relay
import Foundation

/// A stream's metadata: `GET /streams/{name}/meta.json`.
struct StreamMeta: Encodable {
    var name: String
    var title: String?
    var description: String?
    var keywords: [String]
    var preview: String?
    var hls: String?

    init?(engine: RelayEngine, name: String) {
        guard let s = engine.settings(name) else { return nil }
        self.name = name
        title = s.title
        description = s.description
        keywords = s.keywords
        preview = engine.preview(name) != nil ? "/streams/\(name)/preview.mjpg" : nil
        // With renditions, players get the ladder (hls.js switches between them).
        hls = engine.hls(name) != nil ? "/streams/\(name)/hls/\(s.renditions.isEmpty ? "index" : "master").m3u8" : nil
    }
}

/// The API's view of a stream: its status and every output from the hub's registry.
struct StreamView: Encodable {
    var stream: StreamStatus
    /// Every output, as registered: kind, state, policy, counters.
    var sinks: [OutputStatus]
    var meta: StreamMeta?
    var forwards: [ForwardStatus]
    var recordings: [String]
    var hls: HLSView?
    /// `config` (the file) or `api` (made or last set through the API, kept in the catalog).
    var origin: String
    /// In a fleet: the node that reads the stream's source (nil: none yet, or not a fleet).
    var owner: String?
    /// In a fleet: the node that answered.
    var node: String?
    /// A rendition's stream: what it is made from and its encoder (path and why).
    var rendition: RenditionInfo?

    struct HLSView: Encodable {
        var variant: String
        var url: String
        var mediaSequence: Int
        var segments: Int
        var targetDuration: Int
        var ended: Bool
        /// Last frame arrived → its part (LL-HLS) or segment listed.
        var availability: LatencySummary
        var push: HLSPushCounters?
        var directory: HLSDirectoryStatus?
    }

    init(hub: StreamHub, engine: RelayEngine) {
        stream = hub.currentStatus
        origin = engine.settings(hub.name)?.madeByAPI == true ? "api" : "config"
        rendition = engine.renditions[hub.name]
        if let p = engine.placement {
            owner = p.owner(of: hub.name)
            node = p.nodeName
        }
        meta = StreamMeta(engine: engine, name: hub.name)
        let outputs = hub.outputs
        sinks = outputs.map(\.status)
        forwards = outputs.compactMap { ($0 as? Forwarder)?.currentStatus }
        recordings = outputs.compactMap { ($0 as? Recorder)?.recordedFiles }.flatMap { $0 }
        hls = outputs.lazy.compactMap { $0 as? HLSSegmenter }.first.map { h in
            let p = h.store.snapshot
            return HLSView(variant: h.store.settings.variant.rawValue, url: "/streams/\(hub.name)/hls/index.m3u8", mediaSequence: p.mediaSequence,
                           segments: p.complete.count, targetDuration: p.targetDuration, ended: p.ended,
                           availability: h.store.availability.summary, push: h.pusher?.stats, directory: h.directoryWriter?.status)
        }
    }
}
