public import Foundation
import Glibc
public import Logging

/// Keeps each stream's recordings within its `record.keep` (age) and `record.max_bytes` (size):
/// the oldest files go first, never one inside a hold, never the one being written (it is not
/// catalogued until finished). A deleted file's row stays, marked, so the chain still verifies.
public final class RetentionPruner: Sendable {
    private let catalog: any CatalogStore
    private let logger: Logger
    private let task: Task<Void, Never>

    /// Looks every `every` seconds at the streams `streams` names with their record settings,
    /// and at the free space on their disks (`minFree`, `recordings.min_free`).
    public init(catalog: any CatalogStore, every: Double = 5, minFree: Int? = nil, logger: Logger,
                streams: @escaping @Sendable () -> [(name: String, settings: RecordSettings)]) {
        self.catalog = catalog
        self.logger = logger
        task = Task {
            while true {
                try? await Task.sleep(for: .seconds(every))
                // Stopped while it slept (the server shuts down): no pass begins.
                if Task.isCancelled { return }
                // A pass that began runs to its end, out of reach of `stop()`'s cancellation:
                // a file it deletes is marked and audited in the catalog, not left half done
                // by a CancellationError between the two (which was also logged as a failure).
                await Task {
                    let all = streams()
                    for (name, settings) in all where settings.keep != nil || settings.maxBytes != nil {
                        await Self.prune(stream: name, settings: settings, catalog: catalog, logger: logger)
                    }
                    if let minFree { await Self.keepFree(floor: minFree, streams: all, catalog: catalog, logger: logger) }
                }.value
            }
        }
    }

    public func stop() { task.cancel() }

    /// A failure that only says the work was cancelled (shutdown): not a fault of the catalog,
    /// and not logged as one.
    static func stopped(_ error: any Error) -> Bool { error is CancellationError }

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
                    await catalog.audit(AuditEntry(who: "retention", action: .delete, stream: stream, start: s.start, end: s.end,
                                                   detail: "record.keep or record.max_bytes: \((s.path as NSString).lastPathComponent)"), logger: logger)
                } catch {
                    if stopped(error) { return }
                    logger.warning("record: retention cannot delete a file", metadata: ["stream.name": "\(stream)", "file": "\(s.path)", "error": "\(error)"])
                }
            }
        } catch {
            if stopped(error) { return }
            logger.warning("record: retention cannot read the catalog", metadata: ["stream.name": "\(stream)", "error": "\(error)"])
        }
    }

    /// Free bytes for an unprivileged writer on the disk holding `path`, and the disk's id;
    /// nil when it cannot be asked (the directory is not there yet).
    public static func disk(of path: String) -> (id: UInt, free: Int)? {
        var s = statvfs()
        // The device, not statvfs's f_fsid (0 for every tmpfs). Read through Foundation: which
        // C module owns `stat`'s members depends on the build's order (MemberImportVisibility).
        guard statvfs(path, &s) == 0,
              let device = (try? FileManager.default.attributesOfItem(atPath: path))?[.systemNumber] as? NSNumber else { return nil }
        return (device.uintValue, Int(clamping: UInt64(s.f_bavail).multipliedReportingOverflow(by: UInt64(s.f_frsize)).partialValue))
    }

    /// Keeps `floor` bytes free on each disk the streams record to: below it, the oldest
    /// segments on that disk go first, whichever stream they are of, never one inside a hold.
    static func keepFree(floor: Int, streams: [(name: String, settings: RecordSettings)], catalog: any CatalogStore, logger: Logger,
                         disk: (String) -> (id: UInt, free: Int)? = disk(of:)) async {
        var byDisk: [UInt: (free: Int, streams: [String])] = [:]
        for (name, settings) in streams {
            guard let d = disk(settings.path) else { continue }
            byDisk[d.id, default: (d.free, [])].streams.append(name)
        }
        for (_, group) in byDisk where group.free < floor {
            var free = group.free
            do {
                var candidates: [RecordedSegment] = []
                for name in group.streams {
                    let holds = try await catalog.holds(stream: name)
                    candidates += try await catalog.segments(stream: name, from: .distantPast, to: .distantFuture)
                        .filter { s in !holds.contains(where: { $0.covers(s) }) }
                }
                for s in candidates.sorted(by: { $0.start < $1.start }) {
                    guard free < floor else { break }
                    do {
                        if FileManager.default.fileExists(atPath: s.path) { try FileManager.default.removeItem(atPath: s.path) }
                        try await catalog.markDeleted(stream: s.stream, path: s.path, at: Date())
                        free += s.bytes
                        logger.info("record: the free-space floor deleted a file", metadata: ["stream.name": "\(s.stream)", "file": "\(s.path)"])
                        await catalog.audit(AuditEntry(who: "retention", action: .delete, stream: s.stream, start: s.start, end: s.end,
                                                       detail: "recordings.min_free: \((s.path as NSString).lastPathComponent)"), logger: logger)
                    } catch {
                        if stopped(error) { return }
                        logger.warning("record: retention cannot delete a file", metadata: ["stream.name": "\(s.stream)", "file": "\(s.path)", "error": "\(error)"])
                    }
                }
                if free < floor {
                    logger.warning("record: free space is below recordings.min_free and nothing more may be deleted (held or being written)",
                                   metadata: ["free": "\(free)", "min_free": "\(floor)"])
                }
            } catch {
                if stopped(error) { return }
                logger.warning("record: retention cannot read the catalog", metadata: ["error": "\(error)"])
            }
        }
    }
}
