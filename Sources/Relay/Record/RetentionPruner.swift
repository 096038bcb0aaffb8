public import Foundation
public import Logging

/// Keeps each stream's recordings within its `record.keep` (age) and `record.max_bytes` (size):
/// the oldest files go first, never one inside a hold, never the one being written (it is not
/// catalogued until finished). A deleted file's row stays, marked, so the chain still verifies.
public final class RetentionPruner: Sendable {
    private let catalog: any CatalogStore
    private let logger: Logger
    private let task: Task<Void, Never>

    /// Looks every `every` seconds at the streams `streams` names with their record settings.
    public init(catalog: any CatalogStore, every: Double = 5, logger: Logger,
                streams: @escaping @Sendable () -> [(name: String, settings: RecordSettings)]) {
        self.catalog = catalog
        self.logger = logger
        task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(every))
                for (name, settings) in streams() where settings.keep != nil || settings.maxBytes != nil {
                    await Self.prune(stream: name, settings: settings, catalog: catalog, logger: logger)
                }
            }
        }
    }

    public func stop() { task.cancel() }

    /// The segments to delete, oldest first: past `keep`, or while the stream is over
    /// `maxBytes`, unless a hold covers them. `segments` are the stream's live ones.
    public static func plan(_ segments: [RecordedSegment], holds: [RecordingHold], keep: Double?, maxBytes: Int?, now: Date) -> [RecordedSegment] {
        var total = segments.reduce(0) { $0 + $1.bytes }
        var out: [RecordedSegment] = []
        for s in segments.sorted(by: { $0.start < $1.start }) {
            let expired = keep.map { now.timeIntervalSince(s.end) > $0 } ?? false
            let over = maxBytes.map { total > $0 } ?? false
            guard expired || over else { continue }
            guard !holds.contains(where: { $0.covers(s) }) else { continue }
            out.append(s)
            total -= s.bytes
        }
        return out
    }

    static func prune(stream: String, settings: RecordSettings, catalog: any CatalogStore, logger: Logger) async {
        do {
            // The live segments only: rows retention already marked are not read again.
            let live = try await catalog.segments(stream: stream, from: .distantPast, to: .distantFuture)
            let holds = try await catalog.holds(stream: stream)
            for s in plan(live, holds: holds, keep: settings.keep, maxBytes: settings.maxBytes, now: Date()) {
                do {
                    if FileManager.default.fileExists(atPath: s.path) { try FileManager.default.removeItem(atPath: s.path) }
                    try await catalog.markDeleted(stream: stream, path: s.path, at: Date())
                    logger.info("record: retention deleted a file", metadata: ["stream.name": "\(stream)", "file": "\(s.path)"])
                } catch {
                    logger.warning("record: retention cannot delete a file", metadata: ["stream.name": "\(stream)", "file": "\(s.path)", "error": "\(error)"])
                }
            }
        } catch {
            logger.warning("record: retention cannot read the catalog", metadata: ["stream.name": "\(stream)", "error": "\(error)"])
        }
    }
}
