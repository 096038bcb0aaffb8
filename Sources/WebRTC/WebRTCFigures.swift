import Synchronization

/// What the WebRTC server did, for `/metrics`: counted by the sessions as it happens.
final class WebRTCCounters: Sendable {
    /// Packets sent again for a viewer's NACK (RFC 4585), from its history.
    let nackResent = Atomic<Int>(0)
    /// NACKed packets no longer in the viewer's history.
    let nackMissed = Atomic<Int>(0)
    /// PLIs and FIRs from viewers (each passed to the stream, which asks a publisher in turn).
    let keyframeRequestsReceived = Atomic<Int>(0)
    /// PLIs sent to WHIP publishers (the stream's requests, spaced, and the 5 s floor).
    let keyframeRequestsSent = Atomic<Int>(0)
    /// Sender reports sent to viewers.
    let senderReports = Atomic<Int>(0)
}

/// The WebRTC server's figures at one moment.
public struct WebRTCFigures: Sendable, Equatable {
    public var viewers = 0
    public var publishers = 0
    public var iceTCPDropped = 0
    public var nackResent = 0
    public var nackMissed = 0
    public var keyframeRequestsReceived = 0
    public var keyframeRequestsSent = 0
    public var senderReports = 0
}

extension WebRTCServer {
    public var figures: WebRTCFigures {
        let sessions = registry.withLock { Array($0.byID.values) }
        var f = WebRTCFigures()
        f.publishers = sessions.filter { $0.publisher != nil }.count
        f.viewers = sessions.count - f.publishers
        f.iceTCPDropped = tcpDrops
        f.nackResent = counters.nackResent.load(ordering: .relaxed)
        f.nackMissed = counters.nackMissed.load(ordering: .relaxed)
        f.keyframeRequestsReceived = counters.keyframeRequestsReceived.load(ordering: .relaxed)
        f.keyframeRequestsSent = counters.keyframeRequestsSent.load(ordering: .relaxed)
        f.senderReports = counters.senderReports.load(ordering: .relaxed)
        return f
    }
}
