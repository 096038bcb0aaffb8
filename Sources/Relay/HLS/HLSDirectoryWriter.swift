public import Foundation
public import Logging
import Synchronization

/// Writes a stream's HLS into a directory for an existing web server: files appear whole
/// (written aside, then renamed), and what leaves the window is deleted.
public final class HLSDirectoryWriter: Sendable {
    public let directory: URL
    private let logger: Logger

    public init(directory: String, logger: Logger) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        self.logger = logger
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    }

    public func handle(_ output: HLSOutput) {
        switch output {
        case .file(let name, let data): write(name, Data(data))
        case .playlist(let text): write("index.m3u8", Data(text.utf8))
        case .removed(let name): try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    private func write(_ name: String, _ data: Data) {
        let target = directory.appendingPathComponent(name)
        let temp = directory.appendingPathComponent(".\(name).tmp")
        do {
            try data.write(to: temp)
            // rename(2) replaces atomically: a web server never serves half a file.
            guard rename(temp.path, target.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            logger.warning("hls: cannot write to the directory", metadata: ["file": "\(target.path)", "error": "\(error)"])
        }
    }
}

