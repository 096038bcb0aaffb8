import MediaCore

/// What an output of a stream is. The API, the metrics and the pages read this, never a name.
public enum OutputKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The decode stage: a packet consumer that feeds the frame outputs.
    case decode
    /// The low-latency preview (MJPEG, snapshots).
    case preview
    /// An in-process subscriber of decoded frames.
    case frames
    case hls
    case record
    case forward
    /// One viewer's packets, sent on undecoded (a tile of the ops wall).
    case viewer
    /// One RTSP client's packets, cut into RTP.
    case rtsp
    /// One WebRTC (WHEP) viewer's packets, cut into RTP and sent over SRTP.
    case webrtc
    /// One SRT reader's packets, in MPEG-TS.
    case srt

    /// One viewer's own output (joins and leaves are told as events).
    public var isViewer: Bool { self == .viewer || self == .rtsp || self == .webrtc || self == .srt }
}

/// Where an output stands.
public enum OutputState: String, Sendable, Hashable, Codable {
    /// Created, not started (or started with nothing to do yet).
    case idle
    case running
    /// Its destination is away; retrying.
    case reconnecting
    /// A fault stops it for now (a full disk, a removed directory): it retries on its own.
    case faulted
    case stopped
}

/// What the API and `/metrics` show of one output. Decoded, the policy's `keyframeResync` is
/// false: the API does not show it.
public struct OutputStatus: Sendable, Codable {
    public var name: String
    public var kind: OutputKind
    public var state: OutputState
    public var policy: SinkPolicy
    public var queueDepth: Int
    public var counters: SinkCounters
    /// Arrival → taken by the output.
    public var arrivalToDelivered: LatencySummary
    /// Capture → taken, where a capture-time reader is installed (stamped sources).
    public var captureToDelivered: LatencySummary
    public var lastError: String?
    /// Problems so far (write errors and the like).
    public var errors = 0

    public init(name: String, kind: OutputKind, state: OutputState, queue: SinkQueue<some QueueItem>, lastError: String? = nil) {
        self.name = name
        self.kind = kind
        self.state = state
        policy = queue.policy
        queueDepth = queue.depth
        counters = queue.counters
        arrivalToDelivered = queue.deliveredLatency.summary
        captureToDelivered = queue.captureLatency.summary
        self.lastError = lastError
    }

    /// An output's status as the API gave it (a client, a test).
    public init(name: String, kind: OutputKind, state: OutputState, policy: SinkPolicy, queueDepth: Int = 0, counters: SinkCounters = SinkCounters(),
                arrivalToDelivered: LatencySummary, captureToDelivered: LatencySummary, lastError: String? = nil, errors: Int = 0) {
        self.name = name
        self.kind = kind
        self.state = state
        self.policy = policy
        self.queueDepth = queueDepth
        self.counters = counters
        self.arrivalToDelivered = arrivalToDelivered
        self.captureToDelivered = captureToDelivered
        self.lastError = lastError
        self.errors = errors
    }

    enum CodingKeys: String, CodingKey {
        case name, kind, state, ordering, freshness, depth, maxAgeMs, queueDepth, received, delivered, outOfOrder, dropped
        case arrivalToDelivered, captureToDelivered, lastError, errors
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(kind, forKey: .kind)
        try c.encode(state, forKey: .state)
        try c.encode(policy.ordering, forKey: .ordering)
        try c.encode(policy.freshness.name, forKey: .freshness)
        switch policy.freshness {
        case .latest(let n), .lossless(let n): try c.encode(n, forKey: .depth)
        case .maxAge(let ms): try c.encode(ms, forKey: .maxAgeMs)
        case .clean: break
        }
        try c.encode(queueDepth, forKey: .queueDepth)
        try c.encode(counters.received, forKey: .received)
        try c.encode(counters.delivered, forKey: .delivered)
        try c.encode(counters.outOfOrder, forKey: .outOfOrder)
        try c.encode(counters.dropped, forKey: .dropped)
        try c.encode(arrivalToDelivered, forKey: .arrivalToDelivered)
        try c.encode(captureToDelivered, forKey: .captureToDelivered)
        try c.encodeIfPresent(lastError, forKey: .lastError)
        try c.encode(errors, forKey: .errors)
    }

    /// Reads what `encode(to:)` writes: the policy from `ordering`, `freshness` and its bound
    /// (`depth` or `max_age_ms`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        kind = try c.decode(OutputKind.self, forKey: .kind)
        state = try c.decode(OutputState.self, forKey: .state)
        let freshness: Freshness
        switch try c.decode(String.self, forKey: .freshness) {
        case "lossless": freshness = .lossless(capacity: try c.decode(Int.self, forKey: .depth))
        case "latest": freshness = .latest(count: try c.decode(Int.self, forKey: .depth))
        case "max_age": freshness = .maxAge(milliseconds: try c.decode(Int.self, forKey: .maxAgeMs))
        case "clean": freshness = .clean
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .freshness, in: c, debugDescription: "unknown freshness \"\(other)\"")
        }
        policy = SinkPolicy(ordering: try c.decode(Ordering.self, forKey: .ordering), freshness: freshness)
        queueDepth = try c.decode(Int.self, forKey: .queueDepth)
        var counters = SinkCounters()
        counters.received = try c.decode(Int.self, forKey: .received)
        counters.delivered = try c.decode(Int.self, forKey: .delivered)
        counters.outOfOrder = try c.decode(Int.self, forKey: .outOfOrder)
        counters.dropped = try c.decode(DropCounts.self, forKey: .dropped)
        self.counters = counters
        arrivalToDelivered = try c.decode(LatencySummary.self, forKey: .arrivalToDelivered)
        captureToDelivered = try c.decode(LatencySummary.self, forKey: .captureToDelivered)
        lastError = try c.decodeIfPresent(String.self, forKey: .lastError)
        errors = try c.decode(Int.self, forKey: .errors)
    }
}

extension StreamOutput {
    public var isBatching: Bool { false }
}

/// One output of a stream: a consumer with its own bounded queue and policy, registered in the
/// stream's hub. The engine starts and stops it; the API lists it and may switch its policy.
public protocol StreamOutput: AnyObject, Sendable {
    var name: String { get }
    var kind: OutputKind { get }
    var status: OutputStatus { get }
    /// Switches the output's policy at run time. False when this output keeps its own (an
    /// output that must not lose what it was given).
    func setPolicy(_ policy: SinkPolicy) -> Bool
    func start()
    /// Woken only at keyframes, working a keyframe interval at a time (classic HLS, recorder).
    var isBatching: Bool { get }
    /// Finishes what it holds (a last segment, a recording's last fragment) and ends its thread,
    /// without blocking the caller's thread.
    func stop() async
}
