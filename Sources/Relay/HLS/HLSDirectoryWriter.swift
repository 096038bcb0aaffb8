public import Foundation
public import Logging
import MediaCore
import Synchronization

/// What the API shows of a directory writer.
public struct HLSDirectoryStatus: Sendable, Codable {
    public var directory: String
    public var written = 0
    public var errors = 0
    public var lastError: String?
    /// Files dropped unwritten because the disk fell too far behind.
    public var dropped = 0
    public var queuedBytes = 0
}

/// Writes a stream's HLS into a directory for an existing web server: files appear whole
/// (written aside, then renamed), and what leaves the window is deleted. On a thread of its
/// own: a slow or full disk never holds up the segmenter, and HLS over HTTP goes on. Errors
/// (a full disk, the directory removed, permission denied) are counted and shown; the
/// directory is made again when it is gone, and writing resumes when the disk does.
public final class HLSDirectoryWriter: Sendable {
    public let directory: URL
    private let logger: Logger
    private let delivery = HLSDelivery(name: "hls-dir", maxItems: 500, maxBytes: 64 << 20)
    private let counters: Mutex<HLSDirectoryStatus>
    private let tries = Tries()

    /// Safety: touched only on the delivery thread.
    final class Tries: @unchecked Sendable { var count = 0 }

    public init(directory: String, logger: Logger) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        self.logger = logger
        counters = Mutex(HLSDirectoryStatus(directory: directory))
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    }

    public var status: HLSDirectoryStatus {
        var s = counters.withLock { $0 }
        s.queuedBytes = delivery.queue.bytes
        return s
    }

    /// Called on the segmenter's thread: queues and returns.
    public func handle(_ output: HLSOutput) {
        let dropped = delivery.handle(output)
        if dropped > 0 { counters.withLock { $0.dropped += dropped } }
    }

    public func start() {
        delivery.start { [self] output in
            tries.count += 1
            if apply(output) {
                tries.count = 0
                return .done
            }
            if tries.count >= 3 {
                // A live file is worth little once late: given up (counted), the next one tried.
                counters.withLock { $0.dropped += 1 }
                tries.count = 0
                return .giveUp
            }
            // The disk refuses (full, read-only): the same file again in a moment.
            return .retry(after: 0.3)
        }
    }

    /// Writes what is queued (bounded), then stops.
    public func stop(timeout: Double = 3) async {
        await delivery.stop(timeout: timeout)
    }

    /// True when done (or not worth retrying).
    private func apply(_ output: HLSOutput) -> Bool {
        switch output {
        case .file(let name, let data): return write(name, Data(data))
        case .playlist(let text): return write("index.m3u8", Data(text.utf8))
        case .removed(let name):
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            return true
        }
    }

    private func write(_ name: String, _ data: Data) -> Bool {
        let target = directory.appendingPathComponent(name)
        let temp = directory.appendingPathComponent(".\(name).tmp")
        do {
            do {
                try data.write(to: temp)
            } catch where !FileManager.default.fileExists(atPath: directory.path) {
                // The directory was removed: made again, once.
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try data.write(to: temp)
            }
            // rename(2) replaces atomically: a web server never serves half a file.
            guard rename(temp.path, target.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            counters.withLock { $0.written += 1 }
            return true
        } catch {
            try? FileManager.default.removeItem(at: temp)
            let first = counters.withLock { c -> Bool in
                let first = c.lastError == nil || c.errors == 0
                c.errors += 1
                c.lastError = "\(target.path): \(error.localizedDescription)"
                return first
            }
            if first { logger.warning("hls: cannot write to the directory; retrying", metadata: ["file": "\(target.path)", "error": "\(error)"]) }
            return false
        }
    }
}
