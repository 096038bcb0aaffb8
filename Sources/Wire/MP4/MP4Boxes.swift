/// ISO base media file format (MP4) boxes, read from bytes that may be anything: every size
/// and offset is checked against what is there, so a truncated or altered file gives nil, never
/// a trap. Only what recordings need: the top-level walk, a movie's tracks, a fragment's decode
/// times and durations, and a fragment's decode times moved.
public enum MP4 {
    /// A box's head: its type, where it starts, its whole size and its header's length.
    public struct BoxHead: Equatable, Sendable {
        public var type: String
        public var offset: Int
        public var size: Int
        public var headerLength: Int
        public var end: Int { offset + size }
        public var bodyStart: Int { offset + headerLength }
    }

    /// The head of the box at `offset` of `bytes`, whose container ends at `end`; `available` is
    /// how much of the box's head is in `bytes` (a walk over a file reads only heads). Nil when
    /// the head is short or its size runs past `end` or below its own header.
    public static func head(_ bytes: some RandomAccessCollection<UInt8>, at offset: Int, end: Int) -> BoxHead? {
        guard offset >= 0, end <= Int.max - 16 else { return nil }
        guard let first = read32(bytes, offset), let typeCode = read32(bytes, offset + 4) else { return nil }
        var size = Int(first)
        var header = 8
        if first == 1 {
            guard let large = read64(bytes, offset + 8), large <= UInt64(Int.max) else { return nil }
            size = Int(large)
            header = 16
        } else if first == 0 {
            size = end - offset
        }
        guard size >= header, offset <= end, size <= end - offset else { return nil }
        return BoxHead(type: fourCC(typeCode), offset: offset, size: size, headerLength: header)
    }

    /// The boxes directly inside `start..<end` of `bytes`, in order; nil when one does not fit.
    public static func children(_ bytes: some RandomAccessCollection<UInt8>, from start: Int, to end: Int) -> [BoxHead]? {
        var out: [BoxHead] = []
        var at = start
        while at < end {
            guard let h = head(bytes, at: at, end: end) else { return nil }
            out.append(h)
            at = h.end
            guard out.count <= 100_000 else { return nil }
        }
        return out
    }

    /// A track of a movie (`moov`).
    public struct Track: Equatable, Sendable {
        public var id: UInt32
        /// Units per second of the track's times.
        public var timescale: UInt32
        /// `vide`, `soun`, …
        public var handler: String
        /// `trex`'s default sample duration (0: none).
        public var defaultSampleDuration: UInt32
        /// The first sample entry's type (`avc1`, `hvc1`, `mp4a`, `Opus`; empty: none).
        public var sampleEntry: String = ""

        /// The codec's name as FFmpeg says it (`h264`, `aac`), else the sample entry's type.
        public var codecName: String {
            switch sampleEntry {
            case "avc1", "avc3": "h264"
            case "hvc1", "hev1": "hevc"
            case "mp4a": "aac"
            case "Opus": "opus"
            case "av01": "av1"
            case "vp09": "vp9"
            case "ulaw": "pcm_mulaw"
            case "alaw": "pcm_alaw"
            default: sampleEntry
            }
        }
    }

    /// The tracks of a `moov` box given whole (its head included).
    public static func tracks(moov b: [UInt8]) -> [Track]? {
        guard let moov = head(b, at: 0, end: b.count), moov.type == "moov",
              let boxes = children(b, from: moov.bodyStart, to: moov.end) else { return nil }
        var defaults: [UInt32: UInt32] = [:]
        if let mvex = boxes.first(where: { $0.type == "mvex" }), let inner = children(b, from: mvex.bodyStart, to: mvex.end) {
            for trex in inner where trex.type == "trex" {
                // version/flags, track_ID, default description index, default duration
                guard let id = read32(b, trex.bodyStart + 4), let d = read32(b, trex.bodyStart + 12) else { return nil }
                defaults[id] = d
            }
        }
        var out: [Track] = []
        for trak in boxes where trak.type == "trak" {
            guard let inner = children(b, from: trak.bodyStart, to: trak.end),
                  let tkhd = inner.first(where: { $0.type == "tkhd" }), let version = byte(b, tkhd.bodyStart),
                  let id = read32(b, tkhd.bodyStart + (version == 1 ? 20 : 12)),
                  let mdia = inner.first(where: { $0.type == "mdia" }),
                  let media = children(b, from: mdia.bodyStart, to: mdia.end),
                  let mdhd = media.first(where: { $0.type == "mdhd" }), let mv = byte(b, mdhd.bodyStart),
                  let timescale = read32(b, mdhd.bodyStart + (mv == 1 ? 20 : 12)), timescale > 0,
                  let hdlr = media.first(where: { $0.type == "hdlr" }), let handler = read32(b, hdlr.bodyStart + 8) else { return nil }
            var track = Track(id: id, timescale: timescale, handler: fourCC(handler), defaultSampleDuration: defaults[id] ?? 0)
            // mdia / minf / stbl / stsd: version and flags, entry count, then the first entry.
            if let minf = media.first(where: { $0.type == "minf" }), let m = children(b, from: minf.bodyStart, to: minf.end),
               let stbl = m.first(where: { $0.type == "stbl" }), let t = children(b, from: stbl.bodyStart, to: stbl.end),
               let stsd = t.first(where: { $0.type == "stsd" }), let entry = head(b, at: stsd.bodyStart + 8, end: stsd.end) {
                track.sampleEntry = entry.type
            }
            out.append(track)
        }
        return out
    }

    /// One track's run in a movie fragment.
    public struct TrackRun: Equatable, Sendable {
        public var trackID: UInt32
        /// `tfdt`'s base media decode time, in the track's timescale.
        public var decodeTime: UInt64
        /// Where `tfdt`'s time is in the `moof` (nil: no `tfdt`), and its width in bytes (4 or 8).
        public var decodeTimeAt: Int?
        public var decodeTimeWidth: Int
        public var samples: Int
        /// The samples' durations summed, in the track's timescale.
        public var duration: UInt64
        /// The first sample is a sync sample (a keyframe).
        public var startsWithSync: Bool
    }

    /// The track runs of a `moof` box given whole; `tracks` give `trex` defaults. Nil when a box
    /// does not fit or a count runs past the box.
    public static func fragment(moof b: [UInt8], tracks: [Track]) -> [TrackRun]? {
        guard let moof = head(b, at: 0, end: b.count), moof.type == "moof",
              let boxes = children(b, from: moof.bodyStart, to: moof.end) else { return nil }
        var out: [TrackRun] = []
        for traf in boxes where traf.type == "traf" {
            guard let inner = children(b, from: traf.bodyStart, to: traf.end),
                  let tfhd = inner.first(where: { $0.type == "tfhd" }),
                  let tfhdFlags = read32(b, tfhd.bodyStart), let id = read32(b, tfhd.bodyStart + 4) else { return nil }
            // tfhd's optional fields, in order, after the track id.
            var at = tfhd.bodyStart + 8
            if tfhdFlags & 0x01 != 0 { at += 8 } // base data offset
            if tfhdFlags & 0x02 != 0 { at += 4 } // sample description index
            var defaultDuration = tracks.first(where: { $0.id == id })?.defaultSampleDuration ?? 0
            if tfhdFlags & 0x08 != 0 { guard let d = read32(b, at) else { return nil }; defaultDuration = d; at += 4 }
            if tfhdFlags & 0x10 != 0 { at += 4 } // default size
            var defaultFlags: UInt32 = 0
            if tfhdFlags & 0x20 != 0 { guard let f = read32(b, at) else { return nil }; defaultFlags = f }
            var run = TrackRun(trackID: id, decodeTime: 0, decodeTimeAt: nil, decodeTimeWidth: 0, samples: 0, duration: 0, startsWithSync: false)
            if let tfdt = inner.first(where: { $0.type == "tfdt" }), let v = byte(b, tfdt.bodyStart) {
                if v == 1 {
                    guard let t = read64(b, tfdt.bodyStart + 4) else { return nil }
                    run.decodeTime = t
                    run.decodeTimeWidth = 8
                } else {
                    guard let t = read32(b, tfdt.bodyStart + 4) else { return nil }
                    run.decodeTime = UInt64(t)
                    run.decodeTimeWidth = 4
                }
                run.decodeTimeAt = tfdt.bodyStart + 4
            }
            var first = true
            for trun in inner where trun.type == "trun" {
                guard let flags = read32(b, trun.bodyStart), let count = read32(b, trun.bodyStart + 4) else { return nil }
                var p = trun.bodyStart + 8
                if flags & 0x01 != 0 { p += 4 } // data offset
                var firstFlags: UInt32?
                if flags & 0x04 != 0 { guard let f = read32(b, p) else { return nil }; firstFlags = f; p += 4 }
                let perSample = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
                guard p <= trun.end else { return nil }
                // Every sample's fields must be in the box: a count from the file is not trusted.
                let n = Int(count)
                if perSample > 0 { guard n <= (trun.end - p) / perSample else { return nil } }
                if perSample == 0 || flags & 0x100 == 0 {
                    run.duration &+= UInt64(defaultDuration) &* UInt64(count)
                }
                if first, n > 0 {
                    let f = firstFlags ?? (flags & 0x400 != 0 ? read32(b, p + (flags & 0x100 != 0 ? 4 : 0) + (flags & 0x200 != 0 ? 4 : 0)) : nil) ?? defaultFlags
                    // sample_is_non_sync_sample (bit 16) clear, and not said to depend on others (1).
                    run.startsWithSync = f & 0x10000 == 0 && (f >> 24) & 0x3 != 1
                    first = false
                }
                if flags & 0x100 != 0 {
                    for i in 0..<n {
                        guard let d = read32(b, p + i * perSample) else { return nil }
                        run.duration &+= UInt64(d)
                    }
                }
                run.samples += Int(count)
            }
            out.append(run)
        }
        return out
    }

    /// Sets the decode times of a `moof` (given whole) in place: `time(trackID, old)` gives each
    /// track's new time; nil when a time does not fit its field (a 32-bit `tfdt`).
    public static func settingDecodeTimes(moof b: inout [UInt8], tracks: [Track], _ time: (UInt32, UInt64) -> UInt64) -> Bool {
        guard let runs = fragment(moof: b, tracks: tracks) else { return false }
        for r in runs {
            guard let at = r.decodeTimeAt else { continue }
            let t = time(r.trackID, r.decodeTime)
            if r.decodeTimeWidth == 8 {
                for i in 0..<8 { b[at + i] = UInt8(truncatingIfNeeded: t >> (56 - 8 * UInt64(i))) }
            } else {
                guard t <= UInt64(UInt32.max) else { return false }
                for i in 0..<4 { b[at + i] = UInt8(truncatingIfNeeded: t >> (24 - 8 * UInt64(i))) }
            }
        }
        return true
    }

    static func byte(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt8? {
        guard at >= 0, at < b.count else { return nil }
        return b[b.index(b.startIndex, offsetBy: at)]
    }

    public static func read32(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt32? {
        guard at >= 0, at <= b.count - 4 else { return nil }
        var v: UInt32 = 0
        var i = b.index(b.startIndex, offsetBy: at)
        for _ in 0..<4 { v = v << 8 | UInt32(b[i]); i = b.index(after: i) }
        return v
    }

    public static func read64(_ b: some RandomAccessCollection<UInt8>, _ at: Int) -> UInt64? {
        guard let hi = read32(b, at), let lo = read32(b, at + 4) else { return nil }
        return UInt64(hi) << 32 | UInt64(lo)
    }

    static func fourCC(_ v: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> UInt32($0)) }
        // Printable ASCII only: a type from a file never carries control bytes into a log.
        return String(decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
