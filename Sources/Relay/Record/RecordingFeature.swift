public import Logging
import Synchronization

/// `streams.NAME.record`: recordings into segments, catalogued as they finish, with retention
/// (`record.keep`, `record.max_bytes`, `recordings.min_free`) while the engine runs.
public final class RecordingFeature: EngineFeature {
    private let catalog: (any CatalogStore)?
    private let minFree: Int?
    private let logger: Logger
    /// Recorders' finished files, on their way into the catalog.
    private let segmentWriter: SegmentWriter
    private let pruner = Mutex<RetentionPruner?>(nil)

    public init(_ context: EngineContext) {
        catalog = context.catalog
        minFree = context.configuration.recordingsMinFree
        logger = context.logger
        let events = context.events, log = context.logger
        segmentWriter = SegmentWriter(catalog: context.catalog, onDone: { s in
            events.publish(StreamEvent(stream: s.stream, kind: .segmentComplete, details: s.eventDetails))
        }, onError: { segment, error in
            log.error("catalog: a recording segment is not catalogued", metadata: ["file": "\(segment.path)", "error": "\(error)"])
        })
    }

    public func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
        if let r = stream.record { _ = Recorder(hub: hub, settings: r, segments: segmentWriter, logger: logger) }
    }

    public func start(engine: RelayEngine) {
        guard let catalog else { return }
        let p = RetentionPruner(catalog: catalog, minFree: minFree, logger: logger) { [weak engine] in
            // As placed: in a fleet, a stream's recordings are kept by the node that reads it.
            guard let engine else { return [] }
            return engine.streams.map { engine.placed($0) }.compactMap { s in s.record.map { (s.name, $0) } }
        }
        pruner.withLock { $0 = p }
    }

    /// Retention stops first: no sweep while streams and the catalog wind down.
    public func stopping() { pruner.withLock { $0 }?.stop() }

    public func drain() async {
        // The recorders' last files are written: into the catalog with them.
        await segmentWriter.drain()
    }
}

extension RelayEngine {
    public func recorder(_ stream: String) -> Recorder? { outputs(stream, Recorder.self).first }
}
