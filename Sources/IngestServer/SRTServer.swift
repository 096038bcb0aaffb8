public import Access
public import Relay
public import Logging
public import Demux
import MediaCore
import Foundation
import Synchronization

/// The one SRT port (`ingest.srt`): many callers on one UDP port, each routed to its stream by
/// its `streamid`, publishers and readers alike, judged during the handshake (unknown stream,
/// a stream that already has a publisher: refused with SRT's reject codes; the stream's
/// passphrase required, so a wrong one fails the handshake).
/// - A publisher's MPEG-TS goes to its stream through `PublishPoints`, where libavformat
///   demuxes it like any source. A caller that drops and returns resumes the same stream.
/// - A reader (`read:NAME`, `#!::r=NAME,m=request`) gets the stream in MPEG-TS (`SRTReader`).
public final class SRTServer: Sendable {
    let settings: IngestSettings.SRTIngest
    let engine: RelayEngine
    var points: PublishPoints { engine.publishPoints }
    let logger: Logger
    /// Decides every caller: passphrases, users in the stream ID, anonymous publishing.
    let authorizer: Authorizer
    private let listener = Mutex<SRTListener?>(nil)
    /// The port is open (not stopped).
    var isListening: Bool { listener.withLock { $0 != nil } }
    /// Refusals (`bad_request`, `mode`, `unknown_stream`, `key`, `limited`, `busy`) and acceptances.
    private let publishers: PublisherEvents
    /// Callers refused so far, by reason (a reader's as `read_` and the reason).
    public var refusals: [String: Int] { publishers.refusals.merging(readerRefusals.withLock { $0 }, uniquingKeysWith: +) }
    private let readerRefusals = Mutex<[String: Int]>([:])
    /// Readers served so far (each one's output is named after it).
    private let readers = Atomic<Int>(0)
    /// A caller silent this long (connected, sending nothing) is dropped.
    static let silence: Duration = .seconds(10)

    public init(settings: IngestSettings.SRTIngest, engine: RelayEngine, logger: Logger, authorizer: Authorizer) {
        self.settings = settings
        self.engine = engine
        self.logger = logger
        self.authorizer = authorizer
        publishers = PublisherEvents(events: engine.events, protocolName: "srt")
    }

    /// Binds and starts accepting; returns the bound port.
    public func start() throws(IngestError) -> Int {
        let l = try SRTListener(host: settings.host, port: settings.port, latency: .milliseconds(Int(settings.latency * 1000)),
                                decide: { [weak self] id, peer in self?.decide(id, peer: peer) ?? .reject(.forbidden) },
                                accepted: { [weak self] caller in
                                    if let self { self.serve(caller) } else { caller.close() }
                                })
        listener.withLock { $0 = l }
        l.start()
        return l.port
    }

    public func stop() {
        listener.withLock { $0 }?.stop()
        listener.withLock { $0 = nil }
    }

    private func refused(_ reason: String, _ id: String, _ peer: String) {
        let parsed = SRTStreamID(id)
        if parsed?.mode == .request {
            readerRefusals.withLock { $0["read_" + reason, default: 0] += 1 }
        } else {
            publishers.refused(reason, stream: parsed?.name ?? "", peer: peer)
        }
        logger.notice("srt: caller refused", metadata: ["reason": "\(reason)", "streamid": "\(Redactor.scrub(SRTStreamID.withoutSecret(id)))", "peer": "\(peer)"])
    }

    /// During the handshake (libsrt's thread, so nothing slow): whether and how to take a caller.
    /// The authorizer says which passphrase libsrt must find in the handshake; a caller that
    /// does not arrive with it counts as a wrong passphrase of its address.
    func decide(_ raw: String, peer: String) -> SRTListener.Decision {
        guard let id = SRTStreamID(raw) else { refused("bad_request", raw, peer); return .reject(.badRequest) }
        switch id.mode {
        case .publish: break
        case .request: return decideReader(id, raw: raw, peer: peer)
        case .other: refused("mode", raw, peer); return .reject(.badMode)
        }
        let exists = engine.settings(id.name) != nil
        guard exists ? points.streams.contains(id.name) : settings.autoCreate && RTMPIngestServer.isNewStreamName(id.name) else {
            refused("unknown_stream", raw, peer)
            return .reject(.notFound)
        }
        if points.isLive(id.name) { refused("busy", raw, peer); return .reject(.conflict) }
        // A user in the stream ID is checked once connected, off libsrt's thread (bcrypt).
        if id.user != nil && id.password != nil && authorizer.isEnabled { return .accept(passphrase: nil) }
        return shared(AccessRequest(.none, .publish, stream: id.name, door: .srt, peer: Self.host(peer)), raw: raw, peer: peer)
    }

    /// A reader: of a stream that exists (a rendition too), with its read passphrase, a user in
    /// the stream ID, or as anyone where reading is open.
    private func decideReader(_ id: SRTStreamID, raw: String, peer: String) -> SRTListener.Decision {
        guard engine.hubs[id.name] != nil else { refused("unknown_stream", raw, peer); return .reject(.notFound) }
        if id.user != nil && id.password != nil && authorizer.isEnabled { return .accept(passphrase: nil) }
        return shared(AccessRequest(.none, .read, stream: id.name, door: .srt, peer: Self.host(peer)), raw: raw, peer: peer)
    }

    /// The passphrase the authorizer asks of a caller without a user, or its refusal.
    private func shared(_ request: AccessRequest, raw: String, peer: String) -> SRTListener.Decision {
        switch authorizer.sharedSecret(request, attempt: peer) {
        case .passphrase(let phrase): return .accept(passphrase: phrase)
        case .open: return .accept(passphrase: nil)
        case .limited:
            refused("limited", raw, peer)
            return .reject(.unauthorized)
        case .refused:
            refused("key", raw, peer)
            return .reject(.unauthorized)
        }
    }

    /// `192.0.2.7:5000` → `192.0.2.7`; `[2001:db8::1]:5000` → `2001:db8::1`.
    static func host(_ peer: String) -> String {
        var h = Substring(peer)
        if let colon = h.lastIndex(of: ":") { h = h[..<colon] }
        if h.hasPrefix("["), h.hasSuffix("]") { h = h.dropFirst().dropLast() }
        return String(h)
    }

    /// Waits for an async answer on this (caller's own) thread.
    private func wait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// An accepted caller, on its own thread: its credentials if it named a user, its stream
    /// made if new, then its media into the stream's pipe until it leaves or falls silent.
    func serve(_ caller: SRTConnection) {
        defer { caller.close() }
        // Through the handshake: its passphrase, if one was asked, was right.
        authorizer.attemptSucceeded(caller.peer)
        guard let id = SRTStreamID(caller.streamID) else { return }
        if let user = id.user, let password = id.password, authorizer.isEnabled {
            let action: AccessAction = id.mode == .request ? .read : .publish
            let request = AccessRequest(.userPassword(user: user, password: password), action, stream: id.name, door: .srt, peer: Self.host(caller.peer))
            let authorizer = self.authorizer
            switch wait({ await authorizer.authorize(request) }) {
            case .allowed: break
            case .limited:
                refused("limited", caller.streamID, caller.peer)
                return
            case .unauthorized, .forbidden:
                refused("key", caller.streamID, caller.peer)
                return
            }
        }
        if id.mode == .request {
            read(id.name, caller)
            return
        }
        if engine.settings(id.name) == nil {
            guard settings.autoCreate else { return }
            let made = engine.configuration.ingest.autoCreated(id.name)
            let engine = self.engine
            let logger = self.logger
            _ = wait {
                do { try await engine.add(made); return true } catch {
                    // A concurrent first publish made it: fine. Anything else is said.
                    if engine.settings(made.name) == nil {
                        logger.warning("srt: could not make the stream for a first publish", metadata: ["stream.name": "\(made.name)", "error": "\(error)"])
                    }
                    return false
                }
            }
        }
        let fd: Int32
        switch points.begin(id.name) {
        case .success(let f): fd = f
        case .failure(let why):
            refused(why == .alreadyPublishing ? "busy" : "unknown_stream", caller.streamID, caller.peer)
            return
        }
        logger.info("srt ingest: publishing", metadata: ["stream": "\(id.name)", "peer": "\(caller.peer)"])
        publishers.accepted(stream: id.name, peer: caller.peer)
        var buffer = [UInt8](repeating: 0, count: 1500)
        var silent: Duration = .zero
        var ended = "the caller left"
        let tick: Duration = .milliseconds(500)
        // libsrt's counters go to the stream's status about once a second.
        var nextHealth = ContinuousClock.now
        pump: while listener.withLock({ $0 != nil }) {
            if ContinuousClock.now >= nextHealth, let srt = caller.linkHealth {
                nextHealth = ContinuousClock.now + .seconds(1)
                engine.hubs[id.name]?.reportLink(LinkHealth(srt: srt))
            }
            switch caller.receive(into: &buffer, timeout: tick) {
            case .data(let n):
                silent = .zero
                var offset = 0
                while offset < n {
                    let w = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + offset, n - offset) }
                    if w > 0 { offset += w; continue }
                    if w < 0 && errno == EINTR { continue }
                    ended = "the stream stopped reading"
                    break pump
                }
            case .timedOut:
                silent += tick
                if silent >= Self.silence { ended = "the caller fell silent"; break pump }
            case .ended(let why):
                ended = why
                break pump
            }
        }
        close(fd)
        points.end(id.name)
        logger.info("srt ingest: publisher left", metadata: ["stream": "\(id.name)", "why": "\(ended)"])
    }
}

extension SRTServer {
    /// A reader: the stream in MPEG-TS until it leaves (this thread waits; the stream's readers'
    /// thread sends).
    func read(_ stream: String, _ caller: SRTConnection) {
        guard let hub = engine.hubs[stream] else { refused("unknown_stream", caller.streamID, caller.peer); return }
        let n = readers.add(1, ordering: .relaxed).newValue
        logger.info("srt: reader joined", metadata: ["stream": "\(stream)", "peer": "\(caller.peer)", "output": "srt-\(n)"])
        let why = SRTReader.serve(hub: hub, name: "srt-\(n)", connection: caller, running: { [weak self] in self?.isListening ?? false })
        logger.info("srt: reader left", metadata: ["stream": "\(stream)", "peer": "\(caller.peer)", "why": "\(Redactor.scrub(why))"])
    }
}

/// An SRT caller's `streamid`: SRT's access-control syntax `#!::r=NAME,m=publish[,u=USER,s=SECRET]`,
/// MediaMTX's `publish:NAME[:USER:PASSWORD]`, or a plain `NAME` (a publish).
public struct SRTStreamID: Equatable, Sendable {
    public enum Mode: Equatable, Sendable { case publish, request, other }
    public var name: String
    public var mode: Mode
    public var user: String?
    public var password: String?

    public init(name: String, mode: Mode, user: String? = nil, password: String? = nil) {
        self.name = name
        self.mode = mode
        self.user = user
        self.password = password
    }

    public init?(_ raw: String) {
        guard raw.utf8.count <= 512, !raw.contains(where: { $0.isNewline }) else { return nil }
        if let body = Self.accessControlBody(raw) {
            var fields: [String: String] = [:]
            for pair in body.split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { return nil }
                fields[String(kv[0])] = String(kv[1])
            }
            guard let r = fields["r"] else { return nil }
            name = r
            switch fields["m"] ?? "request" {
            case "publish": mode = .publish
            case "request": mode = .request
            default: mode = .other
            }
            user = fields["u"]
            password = fields["s"]
        } else if raw.contains(":") {
            let parts = raw.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            switch parts[0] {
            case "publish": mode = .publish
            case "read": mode = .request
            default: return nil
            }
            guard parts.count == 2 || parts.count == 4 else { return nil }
            name = parts[1]
            if parts.count == 4 { user = parts[2]; password = parts[3] }
        } else {
            name = raw
            mode = .publish
        }
        // Stream names: letters, digits, - and _ (an app prefix such as `live/` is dropped).
        let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2, parts.allSatisfy(RTMPIngestServer.isNewStreamName) else { return nil }
        name = parts.last!
    }

    /// The stream ID with any password removed, for logs.
    /// One that does not parse is shown with whatever could be a password masked: every `s=`
    /// value of SRT's syntax, and everything after the second `:` of MediaMTX's.
    public static func withoutSecret(_ raw: String) -> String {
        if let id = SRTStreamID(raw), id.password != nil { return "\(id.name) (user \(id.user ?? ""))" }
        let masked: String
        if let body = accessControlBody(raw) {
            masked = "#!::" + body.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("s=") ? "s=***" : String($0) }.joined(separator: ",")
        } else {
            let parts = raw.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            masked = parts.count == 3 ? parts[0] + ":" + parts[1] + ":***" : raw
        }
        let shown = String(masked.prefix(80).map { $0.isASCII && !$0.isNewline && ($0.asciiValue ?? 0) >= 32 ? $0 : "?" })
        return masked.count > 80 ? shown + "…" : shown
    }

    /// The fields of SRT's access-control syntax: after `#!::`, or `%23!::` (the `#` of a URI
    /// some callers pass on without decoding it); nil for another syntax.
    static func accessControlBody(_ raw: String) -> Substring? {
        if raw.hasPrefix("#!::") { return raw.dropFirst(4) }
        if raw.hasPrefix("%23!::") { return raw.dropFirst(6) }
        return nil
    }
}
