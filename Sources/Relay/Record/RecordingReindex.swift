public import Foundation
public import Logging

/// The name a recording file is given: `STREAM-YYYYMMDD-HHMMSS.mp4`, or `…-N.mp4` when a second
/// file began in the same second. Read from the end, since stream names may hold `-`.
public struct RecordingFileName: Sendable, Equatable {
    public var stream: String
    /// The second the file began (UTC), from the name.
    public var began: Date

    public init?(_ name: String) {
        guard name.hasSuffix(".mp4") else { return nil }
        var parts = name.dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        func digits(_ s: Substring, _ n: ClosedRange<Int>) -> Bool { n.contains(s.count) && s.allSatisfy(\.isASCIIDigit) }
        let k = parts.count
        // `-N` after the time: a second file in the same second.
        if k >= 4, digits(parts[k - 1], 1...6), digits(parts[k - 2], 6...6), digits(parts[k - 3], 8...8) { parts.removeLast() }
        guard parts.count >= 3 else { return nil }
        let time = parts.removeLast(), day = parts.removeLast()
        guard day.count == 8, time.count == 6, day.allSatisfy(\.isASCIIDigit), time.allSatisfy(\.isASCIIDigit) else { return nil }
        let stream = parts.joined(separator: "-")
        guard !stream.isEmpty else { return nil }
        var c = DateComponents()
        c.timeZone = TimeZone(identifier: "UTC")
        func n(_ s: Substring, _ from: Int, _ count: Int) -> Int { Int(s.dropFirst(from).prefix(count)) ?? 0 }
        (c.year, c.month, c.day) = (n(day, 0, 4), n(day, 4, 2), n(day, 6, 2))
        (c.hour, c.minute, c.second) = (n(time, 0, 2), n(time, 2, 2), n(time, 4, 2))
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        guard let d = cal.date(from: c) else { return nil }
        self.stream = stream
        began = d
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// Rebuilds the recording index from the files when the catalog was lost: each stream's files
/// in its directory, in name order (the order they were written), read for their span, codecs
/// and hash, chained anew. Files already catalogued are left as they are.
public enum RecordingReindex {
    public struct Report: Sendable {
        public var added: [String] = []
        public var skipped: [String] = []
        public var unreadable: [String] = []
    }

    public static func run(catalog: any CatalogStore, streams: [(name: String, directory: String)]) async throws -> Report {
        var report = Report()
        for (name, dir) in streams {
            let known = Set(try await catalog.chain(stream: name).map { ($0.path as NSString).standardizingPath })
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { RecordingFileName($0)?.stream == name }.sorted()
            for file in names {
                let path = ((dir as NSString).appendingPathComponent(file) as NSString).standardizingPath
                if known.contains(path) { report.skipped.append(path); continue }
                guard let segment = segment(path: path, stream: name) else { report.unreadable.append(path); continue }
                try await catalog.addSegment(segment)
                report.added.append(path)
            }
        }
        return report
    }

    /// A file read back as a catalog segment: its start is when it was last written less its
    /// length (the file's name gives the second it began, used when the two disagree).
    public static func segment(path: String, stream: String) -> RecordedSegment? {
        guard let index = try? RecordedFileIndex.read(path: path), let first = index.mediaStart, let last = index.mediaEnd,
              let sha = RecordedSegment.hash(file: path),
              let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        let duration = max(0, last - first)
        var start = RecordingFileName((path as NSString).lastPathComponent)?.began ?? Date()
        if let modified = attributes[.modificationDate] as? Date {
            let fromEnd = modified.addingTimeInterval(-duration)
            if abs(fromEnd.timeIntervalSince(start)) < 2 { start = fromEnd }
        }
        var s = RecordedSegment(stream: stream, path: path, start: start, duration: duration, bytes: index.size,
                                codecs: index.tracks.map(\.codecName).joined(separator: ","), sha256: sha)
        s.index = SegmentIndex(index)
        return s
    }
}
