public import Foundation
public import Logging
import MediaCore
import Synchronization

/// Talk back: who holds each stream's floor (one talker at a time), and what every talk
/// leaves behind: `talk_started` and `talk_ended` events (and so hooks and the wall), two audit
/// lines, and its end after `maxDuration`. The talk's sound goes through its `TalkSession`.
public final class TalkService: Sendable {
    /// One operator talking to one stream.
    public struct Talker: Sendable, Codable, Equatable {
        public var id: String
        public var stream: String
        public var who: String
        /// The client's address, for the audit log.
        public var address: String?
        /// A higher priority takes the floor from a lower one (`admin` over `talk`).
        public var priority: Int
        public var started: Date

        public init(id: String, stream: String, who: String, address: String?, priority: Int, started: Date = Date()) {
            self.id = id
            self.stream = stream
            self.who = who
            self.address = address
            self.priority = priority
            self.started = started
        }
    }

    /// A talk that began: its talker and the session its sound goes through.
    public struct Talk: Sendable {
        public let talker: Talker
        public let session: TalkSession
    }

    /// Why a talk did not begin.
    public enum Refusal: Error, Sendable {
        /// Someone holds the floor with the same or a higher priority.
        case busy(Talker)
        /// The stream has no talk path now (no backchannel, no field unit that listens).
        case noPath(String)
    }

    private struct Holding {
        var talker: Talker
        var session: TalkSession
        /// Ends the talker's connection (its WebRTC session).
        var stop: (@Sendable () -> Void)?
        var timer: Task<Void, Never>?
    }

    private let floors = Mutex<[String: Holding]>([:])
    private let events: StreamEventBus
    private let catalog: (any CatalogStore)?
    private let logger: Logger
    public let maxDuration: Double

    public init(events: StreamEventBus, catalog: (any CatalogStore)?, maxDuration: Double, logger: Logger) {
        self.events = events
        self.catalog = catalog
        self.maxDuration = maxDuration
        self.logger = logger
    }

    /// Who talks to `stream` now.
    public func holder(_ stream: String) -> Talker? { floors.withLock { $0[stream]?.talker } }

    /// Gives `stream`'s floor to `talker` when it is free or held with a lower priority (that
    /// talker is ended, "taken by" this one). The talk's sound goes to `hub`'s talk path.
    public func begin(_ talker: Talker, hub: StreamHub) throws(Refusal) -> Talk {
        guard let target = hub.talkTarget else {
            throw .noPath("stream \"\(talker.stream)\" has no talk path now (talk: true on an ONVIF camera with a backchannel, or a WHIP publisher that receives audio)")
        }
        let session = TalkSession(stream: talker.stream, hub: hub, logger: logger)
        let result: Result<Holding?, Refusal> = floors.withLock { f in
            if let held = f[talker.stream] {
                guard talker.priority > held.talker.priority else { return .failure(.busy(held.talker)) }
            }
            let previous = f[talker.stream]
            f[talker.stream] = Holding(talker: talker, session: session)
            return .success(previous)
        }
        let previous: Holding?
        switch result {
        case .success(let p): previous = p
        case .failure(let r): throw r
        }
        if let previous { finish(previous, reason: "taken by \(talker.who)") }
        events.publish(StreamEvent(stream: talker.stream, kind: .talkStarted, details: ["by": talker.who, "session": talker.id, "format": "\(target.talkFormat)"]))
        audit(talker, end: nil, detail: "started (\(target.talkFormat))")
        logger.info("talk: started", metadata: ["stream.name": "\(talker.stream)", "by": "\(talker.who)", "format": "\(target.talkFormat)"])
        let limit = maxDuration
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .seconds(limit))
            guard !Task.isCancelled else { return }
            self?.end(talker.id, stream: talker.stream, reason: "the maximum talk time (\(Int(limit)) s) passed")
        }
        floors.withLock { f in if f[talker.stream]?.talker.id == talker.id { f[talker.stream]?.timer = timer } else { timer.cancel() } }
        return Talk(talker: talker, session: session)
    }

    /// How to end `id`'s connection when the floor is taken or its time is up.
    public func onStop(_ id: String, stream: String, _ stop: @escaping @Sendable () -> Void) {
        let held = floors.withLock { f -> Bool in
            guard f[stream]?.talker.id == id else { return false }
            f[stream]?.stop = stop
            return true
        }
        // Ended before its connection was made: end that too.
        if !held { stop() }
    }

    /// Ends `id`'s talk on `stream` (released, its connection lost, its time up); false when it
    /// does not hold the floor (ended already).
    @discardableResult
    public func end(_ id: String, stream: String, reason: String) -> Bool {
        guard let held = floors.withLock({ f -> Holding? in
            guard let h = f[stream], h.talker.id == id else { return nil }
            f[stream] = nil
            return h
        }) else { return false }
        finish(held, reason: reason)
        return true
    }

    /// Everything the service holds ends (the server stops).
    public func stop() {
        let all = floors.withLock { f -> [Holding] in defer { f = [:] }; return Array(f.values) }
        for h in all { finish(h, reason: "the server stopped") }
    }

    private func finish(_ held: Holding, reason: String) {
        held.timer?.cancel()
        held.session.close()
        held.stop?()
        let t = held.talker
        let seconds = Date().timeIntervalSince(t.started)
        events.publish(StreamEvent(stream: t.stream, kind: .talkEnded, detail: reason,
                                   details: ["by": t.who, "session": t.id, "seconds": String(format: "%.1f", seconds)]))
        audit(t, end: Date(), detail: "ended: \(reason); \(held.session.summary)")
        logger.info("talk: ended", metadata: ["stream.name": "\(t.stream)", "by": "\(t.who)", "reason": "\(reason)",
                                              "seconds": "\(String(format: "%.1f", seconds))", "sound": "\(held.session.summary)"])
    }

    private func audit(_ t: Talker, end: Date?, detail: String) {
        guard let catalog else { return }
        let entry = AuditEntry(who: t.who, action: .talk, stream: t.stream, start: t.started, end: end, address: t.address, detail: detail)
        let logger = logger
        Task { await catalog.audit(entry, logger: logger) }
    }
}
