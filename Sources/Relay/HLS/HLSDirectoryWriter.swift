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
    private let pending = HLSOutputQueue(maxItems: 500, maxBytes: 64 << 20)
    private let wake = NSCondition()
    private let worker: WorkerThread
    private let counters: Mutex<HLSDirectoryStatus>

    public init(directory: String, logger: Logger) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        self.logger = logger
        counters = Mutex(HLSDirectoryStatus(directory: directory))
        let wake = wake
        worker = WorkerThread(name: "hls-dir", wake: { wake.lock(); wake.broadcast(); wake.unlock() })
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    }

    public var status: HLSDirectoryStatus {
        var s = counters.withLock { $0 }
        s.queuedBytes = pending.bytes
        return s
    }

    /// Called on the segmenter's thread: queues and returns.
    public func handle(_ output: HLSOutput) {
        let dropped = pending.append(output)
        if dropped > 0 { counters.withLock { $0.dropped += dropped } }
        wake.lock(); wake.signal(); wake.unlock()
    }

    public func start() {
        worker.start { [self] in
            var attempts = 0
            while true {
                guard let next = pending.first else {
                    if worker.isStopRequested { return }
                    wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(0.5)); wake.unlock()
                    continue
                }
                attempts += 1
                if apply(next.output) || worker.isStopRequested {
                    pending.remove(next.id)
                    attempts = 0
                } else if attempts >= 3 {
                    // A live file is worth little once late: given up (counted), the next one tried.
                    pending.remove(next.id)
                    counters.withLock { $0.dropped += 1 }
                    attempts = 0
                } else {
                    // The disk refuses (full, read-only): the same file again in a moment.
                    wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(0.3)); wake.unlock()
                }
            }
        }
    }

    /// Writes what is queued (bounded), then stops.
    public func stop(timeout: Double = 3) async {
        await worker.stop(timeout: timeout)
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
