public import Foundation
public import Wire

/// A recorded fragment placed on the wall clock, in a session (a stretch recorded with one
/// continuous media timeline: files of one connection; a restart or a reconnect begins another).
public struct PlacedFragment: Sendable {
    public var file: RecordedFileIndex
    public var segment: RecordedSegment
    public var fragment: RecordedFragment
    public var wall: Date
    public var session: Int
    public var wallEnd: Date { wall.addingTimeInterval(fragment.duration) }
}

/// What the archive holds for a range, fragment by fragment, cut at the keyframe at or before
/// its start: the common ground of HLS playback and MP4 export.
public struct RecordingSelection: Sendable {
    public var fragments: [PlacedFragment]
    /// Catalogued files that could not be read (missing, altered beyond reading), one line each.
    public var problems: [String]

    public var start: Date? { fragments.first?.wall }
    public var end: Date? { fragments.last?.wallEnd }

    /// - Parameters:
    ///   - segments: the stream's live segments overlapping the range, by start.
    public static func select(_ segments: [RecordedSegment], from: Date, to: Date, cache: RecordedFileIndexCache) -> RecordingSelection {
        var out: [PlacedFragment] = []
        var problems: [String] = []
        var session = 0
        var previous: (index: RecordedFileIndex, wallEnd: Date)?
        for s in segments.sorted(by: { $0.start < $1.start }) {
            // The recorder's own index where the catalog has it; else the file, read by its boxes.
            let index: RecordedFileIndex
            do throws(RecordedFileIndex.Problem) {
                if let kept = s.index { index = RecordedFileIndex(segment: s, index: kept) } else { index = try cache.index(s.path, bytes: s.bytes) }
            } catch {
                problems.append("\(URL(fileURLWithPath: s.path).lastPathComponent): \(error)")
                continue
            }
            guard let first = index.mediaStart else { continue }
            if let p = previous {
                let continues = p.index.mediaEnd.map { abs($0 - first) < 0.05 } ?? false
                if !continues || p.index.initHash != index.initHash || s.start.timeIntervalSince(p.wallEnd) > RecordedSpan.gap { session += 1 }
            }
            let placed = index.fragments.map {
                PlacedFragment(file: index, segment: s, fragment: $0, wall: s.start.addingTimeInterval($0.start - first), session: session)
            }
            previous = (index, placed.last?.wallEnd ?? s.start)
            // Overlapping the range; the first one taken in the file moves back to a keyframe.
            guard var lo = placed.firstIndex(where: { $0.wallEnd > from }), placed[lo].wall < to else { continue }
            while lo > 0, !placed[lo].fragment.keyframe { lo -= 1 }
            let hi = placed.lastIndex(where: { $0.wall < to }) ?? lo
            var taken = Array(placed[lo...max(lo, hi)])
            // A session's first fragment taken must be a keyframe (a file begins with one; an
            // export's first piece too).
            if out.last?.session != session { taken = Array(taken.drop(while: { !$0.fragment.keyframe })) }
            out += taken
        }
        return RecordingSelection(fragments: out, problems: problems)
    }
}

/// An HLS VOD playlist over a recording's own fragments: byte ranges of the files, each file's
/// initialization section as its map, a discontinuity where a session begins, and the wall
/// clock as program date-times.
public enum RecordingPlaylist {
    /// - Parameters:
    ///   - target: seconds a playlist segment reaches before the next keyframe ends it (6, as
    ///     VOD usually is: a day's range stays some 14,000 lines).
    ///   - uri: the URI of a file, by its name.
    public static func make(_ selection: RecordingSelection, target: Double = 6, uri: (String) -> String) -> String {
        struct Group { var placed: PlacedFragment; var length: Int; var duration: Double }
        var groups: [Group] = []
        groups.reserveCapacity(selection.fragments.count / 2 + 1)
        for p in selection.fragments {
            if var g = groups.last, g.placed.file.path == p.file.path, g.placed.fragment.offset + g.length == p.fragment.offset,
               !(p.fragment.keyframe && g.duration >= target * 0.95) {
                g.length += p.fragment.length
                g.duration += p.fragment.duration
                groups[groups.count - 1] = g
            } else {
                groups.append(Group(placed: p, length: p.fragment.length, duration: p.fragment.duration))
            }
        }
        let longest = groups.map(\.duration).max() ?? target
        var text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:\(max(1, Int(saturating: longest.rounded(.up))))
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-INDEPENDENT-SEGMENTS

            """
        text.reserveCapacity(text.utf8.count + groups.count * 120)
        var previous: Group?
        var fileURI = ""
        for g in groups {
            if previous?.placed.file.path != g.placed.file.path {
                fileURI = uri(lastComponent(g.placed.file.path))
                if let p = previous, p.placed.session != g.placed.session { text += "#EXT-X-DISCONTINUITY\n" }
                text += "#EXT-X-MAP:URI=\"\(fileURI)\",BYTERANGE=\"\(g.placed.file.initLength)@0\"\n"
                text += "#EXT-X-PROGRAM-DATE-TIME:\(HLSPlaylist.iso8601(g.placed.wall))\n"
            }
            text += "#EXTINF:" + seconds(g.duration) + ",\n#EXT-X-BYTERANGE:\(g.length)@\(g.placed.fragment.offset)\n" + fileURI + "\n"
            previous = g
        }
        text += "#EXT-X-ENDLIST\n"
        return text
    }

    /// `6.00567`: five decimals, without Foundation's formatter (a day's playlist has thousands).
    static func seconds(_ d: Double) -> String {
        let micro = Int64(saturating: (max(0, d) * 100_000).rounded())
        let whole = micro / 100_000, frac = micro % 100_000
        let digits = String(frac)
        return "\(whole)." + String(repeating: "0", count: 5 - digits.count) + digits
    }

    static func lastComponent(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }
}

/// One MP4 made of a recording's own bytes, without re-encoding: the first file's
/// initialization section, then the fragments of the range, each `moof`'s decode times moved
/// so that the clip starts at zero and a later session (after a gap) continues where the one
/// before ended. Every piece's place and length are known before a byte is sent, so Range
/// requests are answered from any offset.
public struct RecordingExport: Sendable {
    public enum Piece: Sendable {
        case bytes([UInt8])
        /// A fragment of a file; its `moof`'s times move by `shift` seconds.
        case fragment(path: String, offset: Int, length: Int, moofLength: Int, shift: Double)
        public var length: Int {
            switch self {
            case .bytes(let b): b.count
            case .fragment(_, _, let length, _, _): length
            }
        }
    }

    public var pieces: [Piece]
    /// Each piece's offset in the clip (`pieces.count + 1` values: the last is the length).
    public var offsets: [Int]
    public var tracks: [MP4.Track]
    public var selection: RecordingSelection
    /// Where the clip stops before the range's end because the tracks changed (a new session
    /// with other parameters): nil when the whole range is in it.
    public var stoppedAt: Date?
    public var length: Int { offsets.last ?? 0 }

    /// - Parameter length: the clip's length in seconds: fragments are taken until it is
    ///   reached (it begins at the keyframe at or before the range's start, so it ends up to a
    ///   fragment past); nil: the whole selection.
    public init?(_ selection: RecordingSelection, length: Double? = nil) {
        guard let first = selection.fragments.first else { return nil }
        var initSection = first.file.initSection
        tracks = first.file.tracks
        if initSection.isEmpty {
            // Indexed from the catalog: the clip's first bytes are read from its first file.
            guard let read = try? RecordedFileIndex.readInit(path: first.file.path), read.initSection.count == first.file.initLength else { return nil }
            (initSection, tracks) = read
        }
        let initHash = first.file.initHash
        var pieces: [Piece] = [.bytes(initSection)]
        var kept: [PlacedFragment] = []
        var shift = 0.0
        var cursor = 0.0
        var session = -1
        var taken = 0.0
        for p in selection.fragments {
            if let length, taken >= length - 0.001 { break }
            if p.file.initHash != initHash { stoppedAt = p.wall; break }
            taken += p.fragment.duration
            if p.session != session {
                session = p.session
                shift = cursor - p.fragment.earliest
            }
            pieces.append(.fragment(path: p.file.path, offset: p.fragment.offset, length: p.fragment.length,
                                    moofLength: p.fragment.moofLength, shift: shift))
            cursor = max(cursor, p.fragment.latest + shift)
            kept.append(p)
        }
        self.pieces = pieces
        var offsets = [0]
        for p in pieces { offsets.append(offsets[offsets.count - 1] + p.length) }
        self.offsets = offsets
        self.selection = RecordingSelection(fragments: kept, problems: selection.problems)
    }

    /// The bytes of piece `i` (a fragment's `moof` with its times moved); nil when its file
    /// cannot be read as it was indexed.
    public func bytes(ofPiece i: Int, from: Int = 0, count: Int? = nil, read: (String, Int, Int) -> [UInt8]?) -> [UInt8]? {
        guard pieces.indices.contains(i) else { return nil }
        let piece = pieces[i]
        let want = min(count ?? piece.length, piece.length - from)
        guard from >= 0, want >= 0 else { return nil }
        switch piece {
        case .bytes(let b):
            return Array(b[from..<(from + want)])
        case .fragment(let path, let offset, _, let moofLength, let shift):
            var out: [UInt8] = []
            out.reserveCapacity(want)
            if from < moofLength {
                guard var moof = read(path, offset, moofLength) else { return nil }
                let moved = MP4.settingDecodeTimes(moof: &moof, tracks: tracks) { id, old in
                    let scale = Double(tracks.first(where: { $0.id == id })?.timescale ?? 90_000)
                    let t = (Double(old) / scale + shift) * scale
                    return t <= 0 ? 0 : UInt64(saturating: t.rounded())
                }
                guard moved else { return nil }
                out += moof[from..<min(moofLength, from + want)]
            }
            let restFrom = max(from, moofLength)
            let restTo = from + want
            if restTo > restFrom {
                guard let rest = read(path, offset + restFrom, restTo - restFrom) else { return nil }
                out += rest
            }
            return out
        }
    }

    /// The pieces that `range` of the clip touches, each with the part of it wanted.
    public func pieces(in range: Range<Int>) -> [(index: Int, from: Int, count: Int)] {
        guard !range.isEmpty, range.lowerBound >= 0, range.upperBound <= length else { return [] }
        // The last piece that starts at or before the range's start.
        var lo = 0, hi = pieces.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if offsets[mid] <= range.lowerBound { lo = mid } else { hi = mid - 1 }
        }
        var out: [(Int, Int, Int)] = []
        var i = lo
        while i < pieces.count, offsets[i] < range.upperBound {
            let from = max(0, range.lowerBound - offsets[i])
            let to = min(pieces[i].length, range.upperBound - offsets[i])
            if to > from { out.append((i, from, to - from)) }
            i += 1
        }
        return out
    }
}

extension RecordingExport {
    /// `count` bytes at `offset` of the file at `path`; nil when there are fewer (a file
    /// deleted or cut short since it was indexed).
    public static func read(path: String, offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, let f = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? f.close() }
        do {
            try f.seek(toOffset: UInt64(offset))
            guard let d = try f.read(upToCount: count), d.count == count else { return count == 0 ? [] : nil }
            return [UInt8](d)
        } catch {
            return nil
        }
    }

    /// The clip's bytes in `range`, piece by piece, in pieces of at most `chunk` bytes, each
    /// read through `offload` (off an event loop); false when a file cannot be read as it was
    /// indexed (the answer is cut short there).
    public func write(_ range: Range<Int>, chunk: Int = 256 << 10,
                      offload: (@escaping @Sendable () -> [UInt8]?) async throws -> [UInt8]?,
                      _ emit: ([UInt8]) async throws -> Void) async throws -> Bool {
        for (i, from, count) in pieces(in: range) {
            var at = from
            while at < from + count {
                let n = min(chunk, from + count - at)
                let start = at
                guard let b = try await offload({ self.bytes(ofPiece: i, from: start, count: n, read: { Self.read(path: $0, offset: $1, count: $2) }) })
                else { return false }
                try await emit(b)
                at += n
            }
        }
        return true
    }
}

extension RecordingExport {
    /// The whole clip through `emit`, hashed as it goes: each piece's SHA-256 and the whole
    /// clip's (one read of the files for both); nil when a file cannot be read as it was
    /// indexed (the clip is cut short there).
    public func writeHashing(chunk: Int = 256 << 10, offload: (@escaping @Sendable () -> [UInt8]?) async throws -> [UInt8]?,
                             _ emit: ([UInt8]) async throws -> Void) async throws -> (pieceHashes: [String], sha256: String)? {
        var whole = SHA256Stream()
        var hashes: [String] = []
        for i in pieces.indices {
            var piece = SHA256Stream()
            var at = 0
            while at < pieces[i].length {
                let n = min(chunk, pieces[i].length - at)
                let start = at
                guard let b = try await offload({ self.bytes(ofPiece: i, from: start, count: n, read: { Self.read(path: $0, offset: $1, count: $2) }) })
                else { return nil }
                piece.update(b)
                whole.update(b)
                try await emit(b)
                at += n
            }
            hashes.append(piece.hex())
        }
        return (hashes, whole.hex())
    }
}

/// What an exported clip is, beside it (`recording.json`): the stream and node, the range
/// asked for and the range in it, the archive's segments it came from with their hashes and
/// chain, and every piece of the clip with its place and SHA-256, so that `liverelay recordings
/// verify-export` names the first altered piece.
public struct ExportManifest: Codable, Sendable, Equatable {
    public struct Segment: Codable, Sendable, Equatable {
        public var file: String
        public var start: Date
        public var duration: Double
        public var bytes: Int
        public var sha256: String
        public var chain: String
        /// The chain value of the segment before it in the stream's chain ("" for its first),
        /// so that the link can be checked with no catalog: `chain` is the SHA-256 of
        /// `previous_chain + sha256`. Nil where it was not looked up (a clip's own manifest).
        public var previousChain: String?
    }
    public struct Piece: Codable, Sendable, Equatable {
        public var offset: Int
        public var length: Int
        public var sha256: String
        /// The segment file and offset it was taken from (nil: the initialization section).
        public var file: String?
        public var fileOffset: Int?
        /// When it plays, on the wall clock.
        public var time: Date?
    }
    public var stream: String
    public var node: String
    public var requestedStart: Date
    public var requestedDuration: Double
    public var start: Date
    public var end: Date
    /// The clip stops before the range's end here: the tracks changed.
    public var stoppedAt: Date?
    public var bytes: Int
    public var sha256: String
    public var segments: [Segment]
    public var pieces: [Piece]
    public var made: Date

    /// Reads the whole clip once to hash it; nil when a file cannot be read.
    public static func make(_ export: RecordingExport, stream: String, node: String, requestedStart: Date,
                            requestedDuration: Double) -> ExportManifest? {
        var whole = SHA256Stream()
        var hashes: [String] = []
        for i in export.pieces.indices {
            guard let b = export.bytes(ofPiece: i, read: { RecordingExport.read(path: $0, offset: $1, count: $2) }) else { return nil }
            whole.update(b)
            hashes.append(SHA256Stream.hex(b))
        }
        return ExportManifest(export, stream: stream, node: node, requestedStart: requestedStart, requestedDuration: requestedDuration,
                              pieceHashes: hashes, sha256: whole.hex())
    }

    /// Checks `clip` against this manifest: nil when every piece and the whole hash match, else
    /// a line naming the first piece that does not.
    public func check(clip path: String) -> String? {
        guard let f = FileHandle(forReadingAtPath: path) else { return "cannot read \(path)" }
        defer { try? f.close() }
        guard let size = try? f.seekToEnd() else { return "cannot read \(path)" }
        return check(size: Int(size)) { RecordingExport.read(path: path, offset: $0, count: $1) }
    }

    /// Checks a clip of `size` bytes, read through `read(offset, count)`, against this
    /// manifest: every piece, the whole hash, and each segment's chain link where the manifest
    /// has the link before it.
    public func check(size: Int, read: (Int, Int) -> [UInt8]?) -> String? {
        var whole = SHA256Stream()
        for p in pieces {
            guard let b = read(p.offset, p.length) else {
                return "the clip ends before piece at byte \(p.offset)\(Self.describe(p)) (clip \(size) bytes, manifest \(bytes))"
            }
            whole.update(b)
            if SHA256Stream.hex(b) != p.sha256 { return "altered: the piece at byte \(p.offset)\(Self.describe(p)) does not match its hash" }
        }
        if size != bytes { return "the clip is \(size) bytes, the manifest says \(bytes)" }
        if whole.hex() != sha256 { return "the clip's SHA-256 does not match the manifest's" }
        for s in segments {
            guard let previous = s.previousChain else { continue }
            var link = SHA256Stream()
            link.update(Array((previous + s.sha256).utf8))
            if link.hex() != s.chain { return "the hash chain breaks at \(s.file): its link is not the SHA-256 of the one before and its own hash" }
        }
        return nil
    }

    static func describe(_ p: Piece) -> String {
        guard let file = p.file else { return " (the initialization section)" }
        return " (\(file) at \(p.fileOffset ?? 0)\(p.time.map { ", \(HLSPlaylist.iso8601($0))" } ?? ""))"
    }
}

extension ExportManifest {
    /// The manifest of `export` whose pieces hashed to `pieceHashes` (in order) and whole to
    /// `sha256`; `previousChains` (by segment path) fills each segment's `previous_chain`.
    public init(_ export: RecordingExport, stream: String, node: String, requestedStart: Date, requestedDuration: Double,
                pieceHashes: [String], sha256: String, previousChains: [String: String] = [:]) {
        var pieces: [Piece] = []
        var fragments = export.selection.fragments.makeIterator()
        for (i, p) in export.pieces.enumerated() {
            var piece = Piece(offset: export.offsets[i], length: p.length, sha256: pieceHashes.indices.contains(i) ? pieceHashes[i] : "",
                              file: nil, fileOffset: nil, time: nil)
            if case .fragment(let path, let offset, _, _, _) = p, let f = fragments.next() {
                piece.file = URL(fileURLWithPath: path).lastPathComponent
                piece.fileOffset = offset
                piece.time = f.wall
            }
            pieces.append(piece)
        }
        var segments: [Segment] = []
        for f in export.selection.fragments where segments.last?.file != URL(fileURLWithPath: f.segment.path).lastPathComponent {
            let s = f.segment
            segments.append(Segment(file: URL(fileURLWithPath: s.path).lastPathComponent, start: s.start, duration: s.duration,
                                    bytes: s.bytes, sha256: s.sha256, chain: s.chain, previousChain: previousChains[s.path]))
        }
        let sel = export.selection
        self.init(stream: stream, node: node, requestedStart: requestedStart, requestedDuration: requestedDuration,
                  start: sel.start ?? requestedStart, end: sel.end ?? requestedStart, stoppedAt: export.stoppedAt,
                  bytes: export.length, sha256: sha256, segments: segments, pieces: pieces, made: Date())
    }
}
