public import Foundation
public import Wire
import Synchronization

/// One fragment (`moof` + `mdat`) of a recording file: where it is and when it plays.
public struct RecordedFragment: Sendable, Equatable {
    public var offset: Int
    public var length: Int
    /// Length of its `moof` (the part whose decode times an export moves).
    public var moofLength: Int
    /// The main track's (video's, else the first's) decode time of the first sample, seconds.
    public var start: Double
    public var duration: Double
    /// Earliest decode time over the tracks, and latest end, seconds.
    public var earliest: Double
    public var latest: Double
    /// Begins with a keyframe: playback and export may start here.
    public var keyframe: Bool
}

/// A recording file's layout, read from its boxes: its initialization section (`ftyp` + `moov`)
/// and each whole fragment. A fragment cut short (a kill -9 while it was written) ends the walk:
/// what came before it plays.
public struct RecordedFileIndex: Sendable {
    public var path: String
    public var size: Int
    /// `ftyp` + `moov` as they are in the file: empty (and no tracks) when the index came from
    /// the catalog; `initLength` and `initHash` are always there.
    public var initSection: [UInt8]
    public var tracks: [MP4.Track]
    public var fragments: [RecordedFragment]
    public var initLength: Int
    public var initHash: String

    public init(path: String, size: Int, initSection: [UInt8], tracks: [MP4.Track], fragments: [RecordedFragment]) {
        self.path = path
        self.size = size
        self.initSection = initSection
        self.tracks = tracks
        self.fragments = fragments
        initLength = initSection.count
        initHash = SHA256Stream.hex(initSection)
    }

    /// A catalogued segment's file, from the index the recorder kept: nothing is read.
    public init(segment: RecordedSegment, index: SegmentIndex) {
        path = segment.path
        size = segment.bytes
        initSection = []
        tracks = []
        fragments = index.fragments
        initLength = index.initLength
        initHash = index.initHash
    }

    /// The file's initialization section and tracks, read (an export's first bytes).
    public static func readInit(path: String) throws(Problem) -> (initSection: [UInt8], tracks: [MP4.Track]) {
        guard let f = FileHandle(forReadingAtPath: path) else { throw .unreadable(path) }
        defer { try? f.close() }
        var at = 0
        var out: [UInt8] = []
        while out.count <= largestHeaderBox {
            guard (try? f.seek(toOffset: UInt64(at))) != nil, let h16 = try? f.read(upToCount: 16), h16.count >= 8,
                  let h = MP4.head([UInt8](h16), at: 0, end: Int.max - 16), h.size <= largestHeaderBox,
                  (try? f.seek(toOffset: UInt64(at))) != nil, let whole = try? f.read(upToCount: h.size), whole.count == h.size else { throw .notARecording(path) }
            out += whole
            at += h.size
            if h.type == "moov" {
                guard let tracks = MP4.tracks(moov: [UInt8](whole)), !tracks.isEmpty else { throw .notARecording(path) }
                return (out, tracks)
            }
        }
        throw .notARecording(path)
    }

    public var mediaStart: Double? { fragments.first?.start }
    public var mediaEnd: Double? { fragments.last.map { $0.start + $0.duration } }

    public enum Problem: Error, CustomStringConvertible {
        case unreadable(String)
        case notARecording(String)
        public var description: String {
            switch self {
            case .unreadable(let s): "cannot read \(s)"
            case .notARecording(let s): "not a fragmented MP4 recording: \(s)"
            }
        }
    }

    /// The biggest `moov` or `moof` read whole: anything larger is not one of ours.
    static let largestHeaderBox = 4 << 20

    public static func read(path: String) throws(Problem) -> RecordedFileIndex {
        guard let f = FileHandle(forReadingAtPath: path) else { throw .unreadable(path) }
        defer { try? f.close() }
        let size: Int
        do { size = Int(try f.seekToEnd()) } catch { throw .unreadable(path) }
        func bytes(_ offset: Int, _ count: Int) -> [UInt8]? {
            guard count >= 0, offset >= 0, offset <= size else { return nil }
            do {
                try f.seek(toOffset: UInt64(offset))
                guard let d = try f.read(upToCount: count), d.count == count else { return nil }
                return [UInt8](d)
            } catch { return nil }
        }
        func head(_ offset: Int) -> MP4.BoxHead? {
            guard let h = bytes(offset, min(16, size - offset)) else { return nil }
            // The head's offsets are in the file; `h` holds only its first bytes.
            guard var b = MP4.head(h, at: 0, end: size - offset) else { return nil }
            b.offset = offset
            return b
        }
        var at = 0
        var initSection: [UInt8] = []
        var tracks: [MP4.Track]?
        while at < size, tracks == nil {
            guard let h = head(at), h.size <= largestHeaderBox, let whole = bytes(at, h.size) else { throw .notARecording(path) }
            initSection += whole
            if h.type == "moov" { tracks = MP4.tracks(moov: whole) }
            at = h.end
            guard initSection.count <= largestHeaderBox else { throw .notARecording(path) }
        }
        guard let tracks, !tracks.isEmpty else { throw .notARecording(path) }
        let main = tracks.first(where: { $0.handler == "vide" }) ?? tracks[0]
        var fragments: [RecordedFragment] = []
        while at < size {
            guard let h = head(at) else { break }
            if h.type != "moof" { at = h.end; continue }
            guard h.size <= largestHeaderBox, let moof = bytes(at, h.size),
                  let runs = MP4.fragment(moof: moof, tracks: tracks), let mdat = head(h.end), mdat.type == "mdat" else { break }
            let seconds = { (r: MP4.TrackRun, t: UInt64) -> Double in
                Double(t) / Double(tracks.first(where: { $0.id == r.trackID })?.timescale ?? main.timescale)
            }
            let m = runs.first(where: { $0.trackID == main.id }) ?? runs.first
            guard let m else { at = mdat.end; continue }
            fragments.append(RecordedFragment(
                offset: at, length: mdat.end - at, moofLength: h.size,
                start: seconds(m, m.decodeTime), duration: seconds(m, m.duration),
                earliest: runs.map { seconds($0, $0.decodeTime) }.min() ?? 0,
                latest: runs.map { seconds($0, $0.decodeTime &+ $0.duration) }.max() ?? 0,
                keyframe: main.handler != "vide" || m.startsWithSync))
            at = mdat.end
        }
        return RecordedFileIndex(path: path, size: size, initSection: initSection, tracks: tracks, fragments: fragments)
    }
}

/// Indexes of finished recording files, kept while they are asked for (a file is not changed
/// once catalogued; a different size reads it again).
public final class RecordedFileIndexCache: Sendable {
    private let entries = Mutex<[String: RecordedFileIndex]>([:])
    private let limit: Int

    public init(limit: Int = 4096) { self.limit = limit }

    public func index(_ path: String, bytes: Int) throws(RecordedFileIndex.Problem) -> RecordedFileIndex {
        if let hit = entries.withLock({ $0[path] }), hit.size == bytes { return hit }
        let fresh = try RecordedFileIndex.read(path: path)
        entries.withLock { e in
            if e.count >= limit { e.removeAll(keepingCapacity: true) }
            e[path] = fresh
        }
        return fresh
    }
}
