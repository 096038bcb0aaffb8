public import Logging
import Demux
import MediaCore
import Foundation
import Synchronization

/// Every configured stream, each a hub with the outputs its features add (preview, HLS,
/// recording, forwards, renditions; `EngineFeature`): the engine behind `liverelay serve`,
/// embeddable in another Swift program without HTTP, and then missing nothing.
public final class RelayEngine: Sendable {
    /// The configuration the engine started with (server, auth, ingest settings; its streams as
    /// they were then — `streams` has them as they are now).
    public let configuration: Configuration
    private struct Live {
        var hubs: [String: StreamHub] = [:]
        /// As configured (the file, the API).
        var streams: [String: Configuration.Stream] = [:]
        /// What each hub runs: its settings as placed, printed (`fingerprint`).
        var placed: [String: String] = [:]
        var running = false
    }
    /// Where streams run in a fleet; nil: each as configured.
    private let placementBox = Mutex<(any StreamPlacement)?>(nil)
    public var placement: (any StreamPlacement)? { placementBox.withLock { $0 } }
    private let live = Mutex(Live())
    /// Serialises adding, replacing and removing streams.
    private let changes = AsyncLock()
    /// Every stream now, by name.
    public var hubs: [String: StreamHub] { live.withLock { $0.hubs } }
    /// A stream's settings now.
    public func settings(_ stream: String) -> Configuration.Stream? { live.withLock { $0.streams[stream] } }
    public var streams: [Configuration.Stream] { live.withLock { Array($0.streams.values) }.sorted { $0.name < $1.name } }
    /// Where publishers on the one-port ingest meet their streams.
    public let publishPoints: PublishPoints
    /// HLS upload ingest (`PUT /ingest/{stream}/{file}`), into the same publish points.
    public let hlsUploads: HLSUploads
    /// Every stream's state changes, for subscribers (`/api/events`).
    public let events: StreamEventBus
    /// Talk back: each stream's floor, and what every talk leaves behind.
    public let talk: TalkService
    /// What plugs into each stream and runs beside the engine, in order.
    public let features: [any EngineFeature]
    private let sources: SourceOpener
    /// The `onvif://` cameras the streams opened: their profiles, streams and PTZ service.
    public var onvifCameras: ONVIFCameras { sources.onvif }
    private let captureAge: CaptureAgeReader?
    private let logger: Logger
    /// Where API changes are kept across restarts; nil: they last as long as the process.
    public let catalog: (any CatalogStore)?

    /// - Parameters:
    ///   - sources: how URLs are opened (the program registers its own schemes, e.g. `testsrc`).
    ///   - captureAge: read on streams configured with `measure: true`.
    ///   - catalog: keeps the API's stream changes (`configuration` already has them layered on).
    ///   - features: what plugs into each stream (`standardFeatures`: all of LiveRelay's).
    public init(configuration: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil,
                catalog: (any CatalogStore)? = nil, features: [EngineFeatureMaker] = RelayEngine.standardFeatures, logger: Logger) {
        self.configuration = configuration
        self.catalog = catalog
        let events = StreamEventBus()
        self.events = events
        talk = TalkService(events: events, catalog: catalog, maxDuration: configuration.talkMaxDuration, logger: logger)
        let context = EngineContext(configuration: configuration, catalog: catalog, events: events, logger: logger)
        self.features = features.map { $0(context) }
        // SRT and HLS-upload publishers' media goes through pipes: a write to one whose reader
        // left (a stream stopped or removed under its publisher) must fail with EPIPE, not kill
        // the process.
        signal(SIGPIPE, SIG_IGN)
        self.sources = sources
        self.captureAge = captureAge
        self.logger = logger
        let points = PublishPoints(streams: Set(configuration.publishStreams.map(\.name)))
        publishPoints = points
        hlsUploads = HLSUploads(points: points)
        var l = Live()
        for s in configuration.streams.flatMap({ $0.expanded() }) {
            l.hubs[s.name] = makeHub(s)
            l.streams[s.name] = s
            l.placed[s.name] = Self.fingerprint(s)
        }
        live.withLock { $0 = l }
    }

    /// Sets the fleet's placement (before `start`): every stream is made again as placed.
    public func place(with placement: any StreamPlacement) async {
        placementBox.withLock { $0 = placement }
        await applyPlacement()
    }

    /// Makes again each stream whose placement changed (the fleet's leases moved): its hub
    /// restarts with the new settings; the others keep running untouched.
    /// - Returns: the streams made again.
    @discardableResult
    public func applyPlacement() async -> [String] {
        await changes.lock()
        defer { changes.unlock() }
        var moved: [String] = []
        for s in live.withLock({ Array($0.streams.values) }).sorted(by: { $0.name < $1.name }) {
            let print = Self.fingerprint(placed(s))
            guard live.withLock({ $0.placed[s.name] }) != print else { continue }
            do {
                try await removeLocked(s.name)
                try addLocked(s)
                moved.append(s.name)
            } catch {
                logger.error("fleet: stream not placed", metadata: ["stream.name": "\(s.name)", "error": "\(error)"])
            }
        }
        return moved
    }

    /// `s` as this node runs it.
    func placed(_ s: Configuration.Stream) -> Configuration.Stream {
        placementBox.withLock { $0 }?.place(s) ?? s
    }

    /// A stream's hub with its outputs, not started, as placed.
    private func makeHub(_ configured: Configuration.Stream) -> StreamHub {
        let s = placed(configured)
        // Its URLs' and keys' secrets are masked in every line from here on (the file's, the
        // API's and a reload's streams alike; as configured: a fleet node that does not read
        // the camera still holds its settings).
        Redactor.remember(secrets: configured.secrets + s.secrets)
        // A publish stream opens by waiting for its publisher on the one-port ingest.
        var sources = sources
        let options = s.sourceOptions
        let points = publishPoints
        sources.register(scheme: PublishPoints.scheme, open: { url, handle throws(IngestError) in
            try points.open(url: url, options: options, interrupt: handle)
        }, validate: { _ in nil })
        for f in features { f.register(sources: &sources, for: s, engine: self) }
        var l = logger
        l[metadataKey: "stream.name"] = "\(s.name)"
        let hub = StreamHub(name: s.name, source: s.source, title: s.title, sourceOptions: s.sourceOptions,
                            decoderOptions: s.decoderOptions, opener: sources, captureAge: s.measure ? captureAge : nil,
                            events: events, onDemandIdle: s.onDemandIdle, logger: l)
        // Each feature's outputs register themselves with the hub.
        for f in features { f.attach(to: hub, stream: s, engine: self, logger: l) }
        return hub
    }

    public enum ChangeError: Error, Equatable, CustomStringConvertible {
        case exists(String)
        case unknown(String)
        public var description: String {
            switch self {
            case .exists(let n): "stream \"\(n)\" exists"
            case .unknown(let n): "unknown stream \"\(n)\""
            }
        }
    }

    /// Adds a stream at run time; it starts at once if the engine runs.
    public func add(_ s: Configuration.Stream) async throws(ChangeError) {
        await changes.lock()
        defer { changes.unlock() }
        for x in s.expanded() { try addLocked(x) }
    }

    private func addLocked(_ s: Configuration.Stream) throws(ChangeError) {
        if live.withLock({ $0.hubs[s.name] != nil }) { throw .exists(s.name) }
        let hub = makeHub(s)
        let print = Self.fingerprint(placed(s))
        let running = live.withLock { l -> Bool in
            l.hubs[s.name] = hub
            l.streams[s.name] = s
            l.placed[s.name] = print
            return l.running
        }
        if s.source.hasPrefix("\(PublishPoints.scheme)://") { publishPoints.add(s.name) }
        if running { Self.start(hub) }
    }

    /// Removes a stream: its ingest stops, its outputs finish (playlists end, recordings close).
    public func remove(_ name: String) async throws(ChangeError) {
        await changes.lock()
        defer { changes.unlock() }
        try await removeExpanded(name)
    }

    /// A stream and its renditions' streams.
    private func removeExpanded(_ name: String) async throws(ChangeError) {
        let derived = live.withLock { l in l.streams.values.filter { $0.partOf == name }.map(\.name) }
        try await removeLocked(name)
        for d in derived.sorted() { try? await removeLocked(d) }
    }

    private func removeLocked(_ name: String) async throws(ChangeError) {
        guard let hub = live.withLock({ l -> StreamHub? in
            l.streams[name] = nil
            l.placed[name] = nil
            return l.hubs.removeValue(forKey: name)
        }) else { throw .unknown(name) }
        publishPoints.remove(name)
        hlsUploads.end(name)
        await hub.stop()
        for o in hub.outputs { await o.stop() }
        for f in features { f.removed(name) }
    }

    /// Replaces a stream's settings: the stream restarts with them (its viewers reconnect).
    public func replace(_ s: Configuration.Stream) async throws(ChangeError) {
        await changes.lock()
        defer { changes.unlock() }
        try await removeExpanded(s.name)
        for x in s.expanded() { try addLocked(x) }
    }

    /// What a reload changed.
    public struct Reload: Sendable, Equatable {
        public var added: [String] = []
        public var removed: [String] = []
        public var changed: [String] = []
        public var unchanged: [String] = []
        /// Streams the new configuration names that could not be applied, with why (one line).
        public var failed: [String: String] = [:]
    }

    /// Applies a newly read configuration's streams: only what changed. An unchanged stream keeps
    /// its connection, its viewers and its HLS sequence. (Server, auth and ingest settings take a
    /// restart.)
    public func reload(_ new: Configuration) async -> Reload {
        await changes.lock()
        defer { changes.unlock() }
        var r = Reload()
        let current = live.withLock { $0.streams }
        let wanted = Dictionary(new.streams.flatMap { $0.expanded() }.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in current.keys.sorted() where wanted[name] == nil {
            do {
                try await removeLocked(name)
                r.removed.append(name)
            } catch {
                r.failed[name] = "\(error)"
            }
        }
        for (name, s) in wanted.sorted(by: { $0.key < $1.key }) {
            do {
                if let old = current[name] {
                    if Self.fingerprint(old) == Self.fingerprint(s) && live.withLock({ $0.placed[name] }) == Self.fingerprint(placed(s)) {
                        r.unchanged.append(name); continue
                    }
                    try await removeLocked(name)
                    try addLocked(s)
                    r.changed.append(name)
                } else {
                    try addLocked(s)
                    r.added.append(name)
                }
            } catch {
                r.failed[name] = "\(error)"
            }
        }
        for (name, why) in r.failed.sorted(by: { $0.key < $1.key }) {
            logger.error("reload: stream not applied", metadata: ["stream.name": "\(name)", "error": "\(why)"])
        }
        return r
    }

    /// Two settings are the same stream when they print the same.
    static func fingerprint(_ s: Configuration.Stream) -> String { String(reflecting: s) }

    /// The outputs of a stream of one type (e.g. `engine.outputs("cam", PreviewService.self)`).
    public func outputs<T>(_ stream: String, _ type: T.Type) -> [T] {
        hubs[stream]?.outputs.compactMap { $0 as? T } ?? []
    }

    /// Starts every feature, every output, then every ingest.
    public func start() {
        for f in features { f.start(engine: self) }
        let all = live.withLock { l -> [StreamHub] in l.running = true; return Array(l.hubs.values) }
        for h in all { for o in h.outputs { o.start() } }
        for h in all { h.start() }
    }

    private static func start(_ hub: StreamHub) {
        for o in hub.outputs { o.start() }
        hub.start()
    }

    /// Stops every stream (each ingest returns within its deadlines), then lets each output
    /// finish: every packet taken is segmented or recorded, playlists end. Suspends; blocks no
    /// thread.
    public func stop() async {
        for f in features { f.stopping() }
        talk.stop()
        let hubs = live.withLock { l -> [String: StreamHub] in l.running = false; return l.hubs }
        await withTaskGroup(of: Void.self) { g in
            for h in hubs.values { g.addTask { await h.stop() } }
        }
        await withTaskGroup(of: Void.self) { g in
            for h in hubs.values { for o in h.outputs { g.addTask { await o.stop() } } }
        }
        for f in features { await f.drain() }
        events.finish()
        for f in features { await f.stop() }
    }

    /// Subscribes to a stream's decoded frames with a policy of your own: the in-process API.
    /// Iterate the subscription; `cancel()` it when done.
    public func subscribe(stream: String, name: String, policy: SinkPolicy = .preview) -> FrameSubscription? {
        guard let hub = hubs[stream] else { return nil }
        return FrameSubscription(hub: hub, name: name, policy: policy)
    }
}

extension RelayEngine {
    /// A stream's settings from an API body (the configuration's keys), checked as the
    /// configuration file is: a problem names its key (`request: streams.cam.hls.variant: …`).
    public func parseStream(name: String, body: [String: ConfigValue]) throws(ConfigError) -> Configuration.Stream {
        try Configuration.apiStream(name: name, body: body, base: configuration, sources: sources, file: "request")
    }

    /// Keeps an API change in the catalog (when there is one), so that it survives a restart.
    /// A catalog that cannot take it is said in one line; the running change stays.
    public func remember(_ change: StreamChange) async {
        guard let catalog else { return }
        do {
            try await catalog.save(change)
        } catch {
            logger.error("catalog: the API change is not kept; it is lost at the next restart",
                         metadata: ["stream.name": "\(change.stream)", "error": "\(error)"])
        }
    }
}
