/// In which order a sink receives what it is given.
public enum Ordering: String, Sendable, Hashable, Codable, CaseIterable {
    /// Frames leave in presentation order: B-frames are reordered, the RTP reorder buffer stays on.
    case presentation
    /// Freshest first: frames leave as they are decoded, even out of order (counted).
    case arrival
}

/// What a sink keeps when it cannot keep up.
public enum Freshness: Sendable, Hashable {
    /// Keep everything up to `capacity`; on overflow (live source) count it and resynchronise.
    case lossless(capacity: Int)
    /// Keep the newest `count`, dropping the oldest.
    case latest(count: Int)
    /// Drop anything older than this many milliseconds, measured from its arrival.
    case maxAge(milliseconds: Int)
    /// Pictures: the newest clean one. A picture decoded from damaged media (a loss since the
    /// last clean keyframe, a decoder error) is not shown; the output holds the last clean one,
    /// marked as held, until the next clean keyframe (counted as `damaged`).
    case clean

    public var name: String {
        switch self {
        case .lossless: "lossless"
        case .latest: "latest"
        case .maxAge: "max_age"
        case .clean: "clean"
        }
    }
}

/// The policies of one sink; switchable at run time.
public struct SinkPolicy: Sendable, Hashable {
    public var ordering: Ordering
    public var freshness: Freshness
    /// Packet sinks: after any drop, discard until the next keyframe with parameter sets and
    /// mark a discontinuity, so the output stays decodable.
    public var keyframeResync: Bool

    public init(ordering: Ordering = .arrival, freshness: Freshness = .latest(count: 1), keyframeResync: Bool = false) {
        self.ordering = ordering
        self.freshness = freshness
        self.keyframeResync = keyframeResync
    }

    /// Preview default: arrival order, newest frame only.
    public static let preview = SinkPolicy(ordering: .arrival, freshness: .latest(count: 1))

    /// Queue bound under this policy.
    public var capacity: Int {
        switch freshness {
        case .lossless(let c): max(1, c)
        case .latest(let n): max(1, n)
        case .maxAge: 256
        case .clean: 1
        }
    }
}

/// Why something was dropped; every drop is counted under one of these, per sink.
public enum DropReason: String, Sendable, Hashable, CaseIterable, Codable {
    case queueFull = "queue_full"
    case tooOld = "too_old"
    case late
    case resync
    case decoderBehind = "decoder_behind"
    case corrupt
    /// A viewer's connection backed up: it skipped to the next keyframe.
    case slowViewer = "slow_viewer"
    /// A picture decoded from damaged media, held back under `clean`.
    case damaged
    /// A viewer's page (its message queue or its decoder) fell behind and said so: it skipped to
    /// the next keyframe.
    case pageBehind = "page_behind"
}
