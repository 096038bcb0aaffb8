import Demux

/// `streams.NAME.renditions`: each rendition is a stream of its own whose source is its
/// parent's pictures in this process (`rendition://PARENT/RUNG`), scaled and encoded again.
public final class RenditionsFeature: EngineFeature {
    /// Every rendition's encoder and state, by its stream.
    public let board = RenditionBoard()
    public init() {}

    public func register(sources: inout SourceOpener, for stream: Configuration.Stream, engine: RelayEngine) {
        let board = board
        sources.register(scheme: RenditionSettings.scheme, open: { [weak engine] url, handle throws(IngestError) in
            guard let (parent, rung) = RenditionSettings.parse(url: url), let engine, let hub = engine.hubs[parent],
                  let settings = engine.settings(parent)?.renditions.first(where: { $0.name == rung }) else {
                throw IngestError(.unreachable, source: url, stage: "opening", detail: "no such stream or rendition")
            }
            return try RenditionSource(url: url, stream: RenditionSettings.streamName(parent, rung), parent: hub, settings: settings,
                                       board: board, interrupt: handle)
        }, validate: { _ in nil })
    }

    public func removed(_ stream: String) { board.remove(stream) }
}

extension RelayEngine {
    /// Every rendition's encoder and state (`streams.NAME.renditions`), by its stream; empty
    /// without the renditions feature.
    public var renditions: RenditionBoard { feature(RenditionsFeature.self)?.board ?? RenditionBoard() }
}
