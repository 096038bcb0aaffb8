import Foundation

/// scripts/browser.py's JSON line: what a viewer saw in headless Chromium, every mode's keys
/// (`--img`, `--all-imgs`, `--wait-text`, `--wall`, `--stamps-tile`, `--video`, `--stamps`,
/// `--rtc-stats`, `--hold`, `--screenshot`), and `error` when the script failed (then the only
/// key). Every field is optional: each mode writes only its own.
///
/// Read it with a plain `JSONDecoder` (``decode(_:)``): the snake_case keys are spelled out
/// below, and the wall's tiles are keyed by stream name, which a snake_case conversion would
/// change.
public struct BrowserReport: Decodable, Sendable {
    /// `--img`: the pictures one `<img>` (MJPEG) showed; null when it showed none.
    public struct Image: Decodable, Sendable {
        public var width: Int?
        public var height: Int?
        /// Pictures sampled after the first.
        public var samples: Int?
        /// Distinct pictures seen.
        public var distinct: Int?
    }

    /// `--video`: the `<video>` element's state (its DOM names).
    public struct Video: Decodable, Sendable {
        /// Seconds.
        public var currentTime: Double?
        public var readyState: Int?
        public var paused: Bool?
        /// `code message`; null without an error.
        public var error: String?
        public var width: Int?
        public var height: Int?
        /// `getVideoPlaybackQuality().totalVideoFrames`; null where the browser lacks it.
        public var frames: Int?
    }

    /// hls.js's own view (`window.hls` and its latency controller; hls.js's names), present when
    /// the page plays with hls.js (`--video`, `--stamps`).
    public struct HLSJS: Decodable, Sendable {
        /// Seconds behind the live edge hls.js aimed for.
        public var targetLatency: Double?
        /// Seconds behind the live edge.
        public var latency: Double?
        public var stalls: Int?
        /// Seconds.
        public var targetDuration: Double?
        /// Seconds.
        public var partTarget: Double?
        public var canBlockReload: Bool?
        /// Seconds.
        public var canSkipUntil: Double?
        public var skippedSegments: Int?
        public var deltaUpdateFailed: Bool?
        /// LiveRelay's live-edge script (`/assets/live-edge.js`) runs in the page; why not, when it could not be loaded.
        public var keptLive: Bool?
        public var edgeError: String?
    }

    /// `--rtc-stats`: the page's (`window.pc`) inbound video stats and its last sender report
    /// (WebRTC stats names).
    public struct RTC: Decodable, Sendable {
        public var packetsReceived: Int?
        public var packetsLost: Int?
        public var nackCount: Int?
        public var pliCount: Int?
        public var firCount: Int?
        public var framesDecoded: Int?
        public var keyFramesDecoded: Int?
        public var framesDropped: Int?
        public var freezeCount: Int?
        /// Seconds.
        public var totalFreezesDuration: Double?
        /// Seconds.
        public var jitter: Double?
        public var reportsSent: Int?
        /// Milliseconds (NTP time as Chromium gives it; may be fractional).
        public var remoteTimestamp: Double?
        /// Milliseconds since 1970 when the stats were read (the page's `Date.now()`).
        public var readAt: Double?
        public init() {}
    }

    /// `--wall`: the ops wall's state (`window.wall`) at the end.
    public struct Wall: Decodable, Sendable {
        public var connected: Bool?
        /// The codecs the page decodes itself (`avc1`), as it told the server.
        public var decoders: [String]?
        /// By stream name.
        public var tiles: [String: Tile]?
    }

    /// One tile of the ops wall.
    public struct Tile: Decodable, Sendable {
        public var path: String?
        /// Why the server sent it that way, and the rendition it plays (nil: the stream itself).
        public var why: String?
        public var rendition: String?
        /// Pictures painted.
        public var painted: Int?
        /// Times the picture changed (sampled every fifth painted).
        public var changes: Int?
        /// The tile has lost its source.
        public var lost: Bool?
        public var state: String?
        public var visible: Bool?
        /// Dropped by the page and by the server.
        public var dropped: Int?
        public var bytes: Int?
        /// Milliseconds; null before a latency was measured.
        public var latencyP50: Double?
        public var latencyKind: String?
        public var latencyP95: Double?
        public var width: Int?
        public var height: Int?
        /// Times the page fell behind on this tile and skipped to a keyframe; what it says now
        /// (`page`, `decoder`; empty: not dropping).
        public var behind: Int?
        public var dropping: String?
        /// The server's drops for this tile, by reason (`page_behind`, `too_old`, …).
        public var serverDrops: [String: Int]?
        /// Where pictures waited on the page, p95 in ms: from the server to the page's handler
        /// beyond the tile's best (the socket and the message queue), and in the decoder.
        public var waitReceiveP95: Double?
        public var waitDecodeP95: Double?

        enum CodingKeys: String, CodingKey {
            case path, why, rendition, painted, changes, lost, state, visible, dropped, bytes, width, height, behind, dropping
            case latencyP50 = "latency_p50"
            case latencyP95 = "latency_p95"
            case latencyKind = "latency_kind"
            case serverDrops = "server_drops"
            case waitReceiveP95 = "wait_receive_p95"
            case waitDecodeP95 = "wait_decode_p95"
        }
    }

    /// The page's address, as given.
    public var url: String?
    /// `--img`.
    public var img: Image?
    /// `--all-imgs`: how many `<img>`s the page has.
    public var imgs: Int?
    /// `--all-imgs`: distinct pictures each `<img>` showed, in page order.
    public var distinct: [Int]?
    /// `--all-imgs`: how many `<img>`s showed at least three distinct pictures.
    public var live: Int?
    /// `--wait-text`: the element's text when it contained the text waited for.
    public var text: String?
    /// `--wait-text`: whether the text appeared in time.
    public var found: Bool?
    /// `--wait-text`: the element's texts, each change once.
    public var seen: [String]?
    /// `--wall`; null when the page has no wall.
    public var wall: Wall?
    /// `--stamps`, `--stamps-tile`: stamped pictures read.
    public var stamps: Int?
    /// `--stamps`: pictures presented whose stamp did not read.
    public var misreads: Int?
    /// `--stamps`, `--stamps-tile`: median capture → presented latency, milliseconds; null
    /// without stamps.
    public var p50: Double?
    /// `--stamps`: the player the page chose (`data-player`: webrtc, hls.js, native).
    public var player: String?
    /// `--stamps`: why WebRTC did not play (`data-webrtc-error`).
    public var webrtcError: String?
    /// `--video`, `--stamps`.
    public var hlsjs: HLSJS?
    /// `--video`: the element at the end (or, when it never started, as it was).
    public var video: Video?
    /// `--video`: whether the video's clock moved (or it reported an error) in time.
    public var started: Bool?
    /// `--video`: seconds the video's clock moved.
    public var advanced: Double?
    /// `--rtc-stats`; null when the page has no `window.pc`.
    public var rtc: RTC?
    /// `--hold`: the page's `data-state` after the hold.
    public var stateAfterHold: String?
    /// `--screenshot`: the file written.
    public var screenshot: String?
    /// The script's failure (its first line), or what the caller saw when no line came.
    public var error: String?

    enum CodingKeys: String, CodingKey {
        case url, img, imgs, distinct, live, text, found, seen, wall, stamps, misreads, p50, player
        case hlsjs, video, started, advanced, rtc, screenshot, error
        case webrtcError = "webrtc_error"
        case stateAfterHold = "state_after_hold"
    }

    /// A report of a failure: `error` only (what the caller saw when the script printed no line).
    public init(error: String? = nil) {
        self.error = error
    }

    /// `line` read with a plain `JSONDecoder`.
    public static func decode(_ line: some StringProtocol) throws -> BrowserReport {
        try JSONDecoder().decode(BrowserReport.self, from: Data(String(line).utf8))
    }
}

/// browser.py's report of its `eval` steps: what each returned, as a `T`.
public struct BrowserEvals<T: Decodable>: Decodable {
    public var evals: [T]

    /// The `eval` steps' values in browser.py's output (its last JSON line); empty when it has none.
    public static func of(_ stdout: String) -> [T] {
        guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else { return [] }
        return (try? JSONDecoder().decode(Self.self, from: Data(line.utf8)))?.evals ?? []
    }
}
