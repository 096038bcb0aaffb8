public import Foundation
import Wire

/// Settings of a stream's HLS republish.
public struct HLSSettings: Sendable, Hashable {
    public enum Variant: String, Sendable, Hashable, CaseIterable {
        case mpegts, fmp4, lowLatency
    }
    public enum PlaylistType: String, Sendable, Hashable, CaseIterable {
        /// The last `segmentCount` segments; older ones are removed.
        case sliding
        /// Every segment kept: a viewer can start from the beginning.
        case event
    }

    public var variant: Variant = .mpegts
    /// Target segment duration in seconds (segments are cut at the first keyframe after it).
    public var segmentDuration: Double = 2
    /// LL-HLS part target in seconds.
    public var partDuration: Double = 0.2
    /// LL-HLS: how far behind the live edge a player should play, in parts (PART-HOLD-BACK).
    /// RFC 8216bis: at least 2, and 3 recommended (Apple's validator warns below 3); hls.js in
    /// low-latency mode plays exactly this far back.
    public var partHoldBack: Double = 3
    public var segmentCount = 7
    public var playlist: PlaylistType = .sliding
    /// Also write the playlist and segments here (for an existing web server).
    public var directory: String?
    /// Also PUT them to this HTTP origin (and DELETE what leaves the window).
    public var push: String?

    public init(variant: Variant = .mpegts) {
        self.variant = variant
        segmentDuration = variant == .lowLatency ? 1 : 2
    }

    public var fileExtension: String { variant == .mpegts ? "ts" : "m4s" }
}

/// One LL-HLS part.
public struct HLSPart: Sendable {
    public let index: Int
    public let duration: Double
    public let independent: Bool
    public let uri: String
    public let data: [UInt8]
}

/// One media segment: complete, or still growing (LL-HLS lists its parts before it is done).
public struct HLSSegment: Sendable {
    public let sequence: Int
    public var duration: Double
    public let uri: String
    /// The segment's bytes when it was cut whole (classic HLS); empty for one built from parts,
    /// whose bytes are its parts' (held once, not twice).
    public var data: [UInt8]
    public var parts: [HLSPart]
    public let programDateTime: Date
    public let discontinuity: Bool
    public let initURI: String?
    public var complete: Bool
    /// Its bytes left memory (an old segment of a long event playlist).
    public var evicted = false
    /// Starts with a keyframe. A segment cut without one (its keyframe was late, lost or never
    /// came) decodes only after the one before it.
    public var independent: Bool = true

    /// The whole segment's bytes: its own, or its parts' one after another.
    public var bytes: [UInt8] { parts.isEmpty ? data : parts.flatMap(\.data) }
}

/// The media playlist, rendered from the segments it holds. Pure: no I/O, no clocks.
public struct HLSPlaylist: Sendable {
    public var settings: HLSSettings
    public var segments: [HLSSegment] = []
    /// Discontinuities that have left the window (EXT-X-DISCONTINUITY-SEQUENCE).
    public var discontinuitySequence = 0
    public var ended = false
    /// EXT-X-TARGETDURATION: fixed for the life of the playlist (RFC 8216 forbids changing
    /// it), the configured segment duration rounded up. The segmenter cuts a segment before
    /// it could outgrow it (`maxSegmentDuration`), keyframe or not.
    public var targetDuration: Int

    /// The longest a segment may last and still round to the target duration.
    public var maxSegmentDuration: Double { Double(targetDuration) + 0.45 }

    public init(settings: HLSSettings) {
        self.settings = settings
        targetDuration = max(1, Int(saturating: settings.segmentDuration.rounded(.up)))
    }

    public var isLowLatency: Bool { settings.variant == .lowLatency }
    public var complete: [HLSSegment] { segments.filter(\.complete) }
    /// The media sequence number of the first segment listed.
    public var mediaSequence: Int { segments.first?.sequence ?? 0 }

    /// The last (msn, part) that exists: the segment being built and its last part, or the last
    /// complete segment.
    public var lastPosition: (msn: Int, part: Int?)? {
        guard let last = segments.last else { return nil }
        if last.complete { return (last.sequence, nil) }
        return (last.sequence, last.parts.last?.index)
    }

    /// True when segment `msn` (and part `part`, when given) is in the playlist.
    public func has(msn: Int, part: Int?) -> Bool {
        guard let s = segments.last(where: { $0.sequence == msn }) else {
            return segments.contains { $0.sequence > msn }
        }
        guard let part else { return s.complete }
        return s.complete || s.parts.contains { $0.index >= part }
    }

    /// LL-HLS delta updates leave out what ends more than this before the playlist's end
    /// (CAN-SKIP-UNTIL: at least six target durations).
    public var skipBoundary: Double { Double(targetDuration) * 6 }

    /// How many of the oldest segments a delta update (`_HLS_skip=YES`) leaves out: complete
    /// ones with at least `skipBoundary` seconds of playlist after them. 0 for classic playlists.
    public var skippableCount: Int {
        guard isLowLatency else { return 0 }
        var after = 0.0 // from the end of segment i to the end of the playlist
        for i in segments.indices.reversed() {
            if after >= skipBoundary && segments[i].complete { return i + 1 }
            after += segments[i].complete ? segments[i].duration : segments[i].parts.reduce(0) { $0 + $1.duration }
        }
        return 0
    }

    /// The playlist; with `skip` (LL-HLS delta update), the oldest `skippableCount` segments
    /// and their tags are replaced by EXT-X-SKIP (the client keeps them from an earlier reload).
    /// `forStaticServer`: for a directory or an origin, which cannot hold a request or answer
    /// `_HLS_` directives: no CAN-BLOCK-RELOAD, CAN-SKIP-UNTIL or preload hint (parts stay).
    public func render(skip: Bool = false, forStaticServer: Bool = false) -> String {
        var out = "#EXTM3U\n"
        out += "#EXT-X-VERSION:\(settings.variant == .mpegts ? 3 : (isLowLatency ? 9 : 7))\n"
        out += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        if isLowLatency {
            let part = Self.seconds3(settings.partDuration)
            let live = forStaticServer ? "" : "CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=\(Self.seconds3(skipBoundary)),"
            out += "#EXT-X-SERVER-CONTROL:\(live)PART-HOLD-BACK=\(Self.seconds3(settings.partDuration * settings.partHoldBack))\n"
            out += "#EXT-X-PART-INF:PART-TARGET=\(part)\n"
        }
        out += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n"
        if discontinuitySequence > 0 { out += "#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n" }
        if settings.playlist == .event { out += "#EXT-X-PLAYLIST-TYPE:EVENT\n" }
        // Promised only while every listed segment starts with a keyframe.
        if segments.allSatisfy(\.independent) { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        let skipped = skip ? skippableCount : 0
        if skipped > 0 { out += "#EXT-X-SKIP:SKIPPED-SEGMENTS=\(skipped)\n" }
        // Parts are listed for the segments within three target durations of the end.
        var partsFrom = segments.count
        if isLowLatency {
            var span = 0.0
            for i in segments.indices.reversed() {
                span += segments[i].duration
                partsFrom = i
                if span > Double(targetDuration) * 3 { break }
            }
        }
        var currentMap: String?
        for (i, s) in segments.enumerated() where i >= skipped {
            if s.discontinuity { out += "#EXT-X-DISCONTINUITY\n" }
            if let m = s.initURI, m != currentMap {
                out += "#EXT-X-MAP:URI=\"\(m)\"\n"
                currentMap = m
            }
            out += "#EXT-X-PROGRAM-DATE-TIME:\(Self.iso8601(s.programDateTime))\n"
            if i >= partsFrom {
                for p in s.parts {
                    out += "#EXT-X-PART:DURATION=\(Self.seconds3(p.duration)),URI=\"\(p.uri)\"\(p.independent ? ",INDEPENDENT=YES" : "")\n"
                }
            }
            if s.complete {
                out += "#EXTINF:\(Self.seconds3(s.duration)),\n\(s.uri)\n"
            }
        }
        if ended {
            out += "#EXT-X-ENDLIST\n"
        } else if isLowLatency, !forStaticServer, let next = nextPartURI {
            out += "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(next)\"\n"
        }
        return out
    }

    /// The part that comes next: announced with a preload hint, requested before it exists.
    public var nextPartURI: String? {
        guard let last = segments.last else { return nil }
        if last.complete { return Self.partURI(msn: last.sequence + 1, part: 0) }
        return Self.partURI(msn: last.sequence, part: (last.parts.last?.index ?? -1) + 1)
    }

    /// The playlist with `query` added to every URI it names (segments, parts, the map, the
    /// preload hint): a token a player could only pass in the playlist's own URL.
    public static func appendingQuery(_ query: String, to playlist: String) -> String {
        var out = ""
        out.reserveCapacity(playlist.utf8.count + 64)
        for line in playlist.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.isEmpty && !line.hasPrefix("#") {
                out += line + (line.contains("?") ? "&" : "?") + query
            } else if let r = line.utf8Range(of: "URI=\"") {
                let rest = line[r.upperBound...]
                if let close = rest.firstIndex(of: "\"") {
                    let uri = rest[..<close]
                    out += line[..<r.upperBound] + uri + (uri.contains("?") ? "&" : "?") + query + rest[close...]
                } else {
                    out += line
                }
            } else {
                out += line
            }
            out += "\n"
        }
        return String(out.dropLast())
    }

    public static func partURI(msn: Int, part: Int) -> String { "part\(msn).\(part).m4s" }

    /// `2026-11-22T11:34:44.123Z`. By hand: Foundation's ISO8601DateFormatter builds an ICU
    /// formatter per call, which was a tenth of a remuxing stream's CPU.
    public static func iso8601(_ d: Date) -> String {
        let ms = Int64(saturating: (d.timeIntervalSince1970 * 1000).rounded(.down))
        var t = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        var tm = tm()
        gmtime_r(&t, &tm)
        let milli = Int(ms - Int64(t) * 1000)
        return "\(tm.tm_year + 1900)-\(pad(Int(tm.tm_mon) + 1, 2))-\(pad(Int(tm.tm_mday), 2))T\(pad(Int(tm.tm_hour), 2)):\(pad(Int(tm.tm_min), 2)):\(pad(Int(tm.tm_sec), 2)).\(pad(milli, 3))Z"
    }

    /// Seconds with three decimals (`2.000`), without `String(format:)`.
    static func seconds3(_ x: Double) -> String {
        let ms = Int64(saturating: (x * 1000).rounded()).clamped(to: -Int64.max...Int64.max)
        let sign = ms < 0 ? "-" : ""
        let a = abs(ms)
        return "\(sign)\(a / 1000).\(pad(Int(a % 1000), 3))"
    }

    private static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
