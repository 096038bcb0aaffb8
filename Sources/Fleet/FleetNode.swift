public import Relay
public import Logging
import Foundation
import MediaCore
import PostgresNIO
import Synchronization
import Demux
import Wire

/// This process as one node of a fleet: it heartbeats in the node registry, holds the leases
/// of the cameras it reads, and tells the engine how to run every stream (`StreamPlacement`).
///
/// Each pulled stream (a camera: any source but `publish`) is read by exactly one live node,
/// its lease holder. A free lease goes to the stream's first choice by rendezvous hashing over
/// the live nodes; a held lease is renewed every `lease / 5` seconds and lapses `lease` seconds
/// after its holder's last renewal, when the next node takes it. A node stops reading a camera
/// before its lease can lapse (it gives up `margin` seconds early when renewals fail), so two
/// nodes never read one camera at once. A returning node does not take cameras back from under
/// their viewers: a holder hands a camera to its first choice only while nobody watches it.
///
/// One statement per tick heartbeats, renews and reads the registry and the leases; another
/// only when a lease is taken or given back. PostgreSQL decides every lease (its clock, its
/// row locks); nothing here votes.
public final class FleetNode: StreamPlacement {
    public let settings: FleetSettings
    public let catalog: PostgresCatalog
    public var database: PostgresDatabase { catalog.database }
    /// This node's HTTP and RTSP addresses as the others reach them.
    public let url: String
    public let rtspURL: String?
    private let logger: Logger
    let ttl: Double
    let tick: Double
    /// A node stops reading a camera this long before its lease could lapse.
    let margin: Double
    /// A camera stays at least this long with the node that took it before it is handed to
    /// its first choice.
    let settle: Double

    /// What the node needs from the engine it places streams for.
    public struct Wiring: Sendable {
        /// Every stream as configured.
        public var streams: @Sendable () -> [Configuration.Stream]
        /// One stream as configured.
        public var stream: @Sendable (String) -> Configuration.Stream?
        /// How many viewers (RTSP clients, wall tiles, remote pulls) a stream has here.
        public var viewers: @Sendable (String) -> Int
        /// Makes again each stream whose placement changed.
        public var apply: @Sendable () async -> Void
        /// The fleet's stream changes (the API on some node): read and apply them.
        public var streamsChanged: @Sendable () async -> Void

        public init(streams: @escaping @Sendable () -> [Configuration.Stream], stream: @escaping @Sendable (String) -> Configuration.Stream?, viewers: @escaping @Sendable (String) -> Int,
                    apply: @escaping @Sendable () async -> Void, streamsChanged: @escaping @Sendable () async -> Void) {
            self.streams = streams
            self.stream = stream
            self.viewers = viewers
            self.apply = apply
            self.streamsChanged = streamsChanged
        }
    }

    struct NodeRow: Equatable {
        var url: String
        var rtspURL: String?
        var heartbeat: Double
    }

    struct State {
        var nodes: [String: NodeRow] = [:]
        var live: Set<String> = []
        /// Every lease as last read: stream → holder, until (database seconds).
        var leases: [String: (node: String, until: Double)] = [:]
        var databaseNow: Double = 0
        /// Leases this node holds: stream → when it must stop reading (monotonic ns).
        var held: [String: UInt64] = [:]
        var heldSince: [String: UInt64] = [:]
        /// When a lease was first seen free (monotonic ns): later choices wait their turn.
        var freeSince: [String: UInt64] = [:]
        /// What placement the engine runs (held streams, other owners): applied when it changes.
        var applied = ""
        var ticks = 0
        var failures = 0
    }
    private let state = Mutex(State())
    private let wiring = Mutex<Wiring?>(nil)
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// Leases taken, renewed, handed over and lost: `liverelay_fleet_*`.
    private let counterBox = Mutex<[String: Int]>([:])
    public var counters: [String: Int] { counterBox.withLock { $0 } }

    public init(settings: FleetSettings, catalog: PostgresCatalog, url: String, rtspURL: String?, logger: Logger) {
        self.settings = settings
        self.catalog = catalog
        self.url = url
        self.rtspURL = rtspURL
        var l = logger
        l[metadataKey: "node"] = "\(settings.node)"
        self.logger = l
        ttl = settings.lease
        tick = settings.lease / 5
        margin = settings.lease / 5
        settle = max(10, settings.lease * 4)
    }

    public var nodeName: String { settings.node }

    // MARK: placement

    /// A stream placed by leases: every source but a publisher's (which lives where its
    /// publisher connects).
    public static func isLeased(_ s: Configuration.Stream) -> Bool {
        !s.source.hasPrefix("publish://") && s.partOf == nil
    }

    /// The scheme of a stream no live node reads yet: opening it fails, said in one line.
    public static let waitingScheme = "fleet"

    public func place(_ s: Configuration.Stream) -> Configuration.Stream {
        var out = s
        if let r = s.record { out.record?.path = settings.recordDirectory(r.path) }
        // A rendition is made where its parent is read.
        let leased = s.partOf ?? s.name
        guard Self.isLeased(s) || s.partOf != nil else { return out }
        let now = MonotonicClock.nanoseconds()
        let (held, owner) = state.withLock { st -> (Bool, NodeRow?) in
            if let d = st.held[leased], d > now { return (true, nil) }
            guard let l = st.leases[leased], l.node != settings.node, l.until > st.databaseNow, st.live.contains(l.node) else { return (false, nil) }
            return (false, st.nodes[l.node])
        }
        if held { return out }
        // Not read here: pulled from its owner on demand, or waiting for one; never recorded,
        // segmented or forwarded here (the owner does).
        out.record = nil
        out.hls = nil
        out.forward = []
        out.onDemandIdle = s.onDemandIdle ?? 10
        out.sourceOptions = SourceOptions()
        if let rtsp = owner?.rtspURL {
            out.source = pullURL(rtsp, stream: s.name)
            out.sourceOptions.transport = .tcp
        } else {
            out.source = "\(Self.waitingScheme)://\(s.name)"
        }
        return out
    }

    /// `rtsp://HOST:PORT/NAME`, with `node.pull_credentials` when set.
    func pullURL(_ base: String, stream: String) -> String {
        guard let creds = settings.pullCredentials, let r = base.utf8Range(of: "://") else { return "\(base)/\(stream)" }
        let user = creds.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.union(.urlPasswordAllowed).union([":"])) ?? creds
        return "\(base[..<r.upperBound])\(user)@\(base[r.upperBound...])/\(stream)"
    }

    public func remoteOwner(of name: String) -> StreamOwner? {
        guard let s = wiring.withLock({ $0 })?.stream(name), Self.isLeased(s) || s.partOf != nil else { return nil }
        let stream = s.partOf ?? name
        return state.withLock { st -> StreamOwner? in
            if st.held[stream] != nil { return nil }
            guard let l = st.leases[stream], l.node != settings.node, l.until > st.databaseNow, st.live.contains(l.node),
                  let n = st.nodes[l.node] else { return nil }
            return StreamOwner(node: l.node, url: n.url, rtspURL: n.rtspURL)
        }
    }

    public func owner(of name: String) -> String? {
        let stream = wiring.withLock({ $0 })?.stream(name)?.partOf ?? name
        return state.withLock { st in
            if st.held[stream] != nil { return settings.node }
            guard let l = st.leases[stream], l.until > st.databaseNow, st.live.contains(l.node) else { return nil }
            return l.node
        }
    }

    public var figures: FleetFigures {
        let (live, held) = state.withLock { ($0.live.count, $0.held.count) }
        return FleetFigures(liveNodes: live, leasesHeld: held, catalogQueries: database.queriesSent, leaseEvents: counters)
    }

    /// Streams this node reads now.
    public var heldStreams: [String] { state.withLock { Array($0.held.keys) }.sorted() }

    // MARK: running

    /// Registers the node, starts heartbeats, renewals and lease placement, and listens for
    /// the fleet's stream changes. Returns after the first tick (the node's first leases).
    public func start(_ w: Wiring) async throws {
        wiring.withLock { $0 = w }
        try await catalog.migrate()
        let (me, u, r) = (settings.node, url, rtspURL)
        try await database.query("""
            INSERT INTO nodes (name, url, rtsp_url, started, heartbeat) VALUES (\(me), \(u), \(r), now(), now())
            ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, rtsp_url = EXCLUDED.rtsp_url, started = now(), heartbeat = now()
            """)
        await tickOnce()
        let ticker = Task { [weak self] in
            while !Task.isCancelled, let self {
                try? await Task.sleep(for: .seconds(self.tick))
                await self.tickOnce()
            }
        }
        // Between ticks (a statement may hang on a lost database): stop reading in time.
        let watchdog = Task { [weak self] in
            while !Task.isCancelled, let self {
                try? await Task.sleep(for: .milliseconds(100))
                await self.expireLocally()
            }
        }
        let db = database
        let changed = w.streamsChanged
        let listener = Task {
            await db.listen(PostgresCatalog.streamsChannel) { _ in await changed() }
        }
        tasks.withLock { $0 = [ticker, watchdog, listener] }
        logger.notice("fleet: node joined", metadata: ["url": "\(url)", "rtsp": "\(rtspURL ?? "-")", "catalog": "\(database.redactedURL)",
                                                       "holds": "\(heldStreams.count)"])
    }

    /// Leaves the fleet: stops ticking, gives back every lease (the engine has stopped reading)
    /// and leaves the registry, so that the others take the cameras at once.
    public func stop() async {
        for t in tasks.withLock({ $0 }) { t.cancel() }
        let me = settings.node
        state.withLock { $0.held = [:] }
        do {
            try await database.query("DELETE FROM leases WHERE node = \(me)")
            try await database.query("DELETE FROM nodes WHERE name = \(me)")
        } catch {
            logger.warning("fleet: could not give back the leases; they lapse by themselves", metadata: ["error": "\(Self.describe(error))"])
        }
        database.close()
    }

    private func count(_ key: String, _ n: Int = 1) {
        guard n > 0 else { return }
        counterBox.withLock { $0[key, default: 0] += n }
    }

    /// Drops held leases whose local deadline passed (renewals failed): the engine stops
    /// reading those cameras before anyone else may take them.
    func expireLocally() async {
        let now = MonotonicClock.nanoseconds()
        let lost = state.withLock { st -> [String] in
            let l = st.held.filter { $0.value <= now }.map(\.key)
            for s in l { st.held[s] = nil; st.heldSince[s] = nil }
            return l
        }
        guard !lost.isEmpty else { return }
        count("lost", lost.count)
        logger.error("fleet: leases not renewed in time; these cameras are no longer read here", metadata: ["streams": "\(lost.sorted())"])
        await applyIfChanged()
    }

    /// One round: heartbeat, renew, read, then take free leases and hand idle ones over.
    func tickOnce() async {
        guard let w = wiring.withLock({ $0 }) else { return }
        let me = settings.node, u = url, r = rtspURL, ttl = ttl
        let sent = MonotonicClock.nanoseconds()
        let rows: [PostgresRow]
        do {
            rows = try await database.query("""
                WITH hb AS (
                    INSERT INTO nodes (name, url, rtsp_url, started, heartbeat) VALUES (\(me), \(u), \(r), now(), now())
                    ON CONFLICT (name) DO UPDATE SET heartbeat = now(), url = EXCLUDED.url, rtsp_url = EXCLUDED.rtsp_url RETURNING name),
                renewed AS (
                    UPDATE leases SET until = now() + make_interval(secs => \(ttl)) WHERE node = \(me) AND until > now() RETURNING stream, until)
                SELECT 'r', stream, '', NULL::text, EXTRACT(EPOCH FROM until)::float8 FROM renewed
                UNION ALL SELECT 'n', name, url, rtsp_url, EXTRACT(EPOCH FROM heartbeat)::float8 FROM nodes
                UNION ALL SELECT 'l', stream, node, NULL::text, EXTRACT(EPOCH FROM until)::float8 FROM leases
                UNION ALL SELECT 't', '', '', NULL::text, EXTRACT(EPOCH FROM now())::float8
                """)
        } catch {
            let n = state.withLock { st -> Int in st.failures += 1; return st.failures }
            if n == 1 || n % 20 == 0 {
                logger.error("fleet: the catalog does not answer; cameras held here stop being read when their leases could lapse",
                             metadata: ["error": "\(Self.describe(error))", "failures": "\(n)"])
            }
            await expireLocally()
            return
        }
        var nodes: [String: NodeRow] = [:], leases: [String: (node: String, until: Double)] = [:], renewed: [String: Double] = [:]
        var dbNow = 0.0
        for row in rows {
            guard let (kind, a, b, c, t) = try? row.decode((String, String, String, String?, Double).self) else { continue }
            switch kind {
            case "r": renewed[a] = t
            case "n": nodes[a] = NodeRow(url: b, rtspURL: c, heartbeat: t)
            case "l": leases[a] = (b, t)
            case "t": dbNow = t
            default: break
            }
        }
        for (s, t) in renewed { leases[s] = (me, t) }
        let live = Set(nodes.filter { $0.key == me || $0.value.heartbeat > dbNow - ttl }.keys).union([me])
        let deadline = sent &+ PeerNumber.nanoseconds(ttl - margin)
        let now = MonotonicClock.nanoseconds()
        let streams = w.streams().filter(Self.isLeased)
        let names = Set(streams.map(\.name))
        // What to take: free leases this node is first choice for, or next choice after the
        // ones before it had their turn (a lease free for `rank × lease` seconds).
        var take: [String] = []
        let (recovered, lostCount) = state.withLock { st -> (Int, Int) in
            let failures = st.failures
            st.failures = 0
            st.nodes = nodes
            st.live = live
            st.leases = leases
            st.databaseNow = dbNow
            st.ticks += 1
            let lost = st.held.keys.filter { renewed[$0] == nil }
            for s in lost { st.held[s] = nil; st.heldSince[s] = nil }
            for s in renewed.keys {
                st.held[s] = deadline
                if st.heldSince[s] == nil { st.heldSince[s] = now }
            }
            for name in names.sorted() where st.held[name] == nil {
                if let l = leases[name], l.until > dbNow { st.freeSince[name] = nil; continue }
                let since = st.freeSince[name] ?? now
                st.freeSince[name] = since
                let rank = Rendezvous.ranking(stream: name, nodes: live).firstIndex(of: me) ?? 0
                if rank == 0 || Double(now &- since) / 1e9 > Double(rank) * ttl { take.append(name) }
            }
            return (failures, lost.count)
        }
        if recovered > 0 { logger.notice("fleet: the catalog answers again", metadata: ["failures": "\(recovered)"]) }
        count("renewed", renewed.count)
        count("lost", lostCount)
        if !take.isEmpty {
            let at = MonotonicClock.nanoseconds()
            do {
                let got = try await database.query("""
                    INSERT INTO leases (stream, node, until, since) SELECT s, \(me), now() + make_interval(secs => \(ttl)), now() FROM unnest(\(take)::text[]) AS s
                    ON CONFLICT (stream) DO UPDATE SET node = EXCLUDED.node, until = EXCLUDED.until, since = EXCLUDED.since, moves = leases.moves + 1
                    WHERE leases.until < now() RETURNING stream, EXTRACT(EPOCH FROM until)::float8
                    """).compactMap { try? $0.decode((String, Double).self) }
                let d = at &+ PeerNumber.nanoseconds(ttl - margin)
                state.withLock { st in
                    for (s, t) in got {
                        st.held[s] = d
                        st.heldSince[s] = MonotonicClock.nanoseconds()
                        st.freeSince[s] = nil
                        st.leases[s] = (me, t)
                    }
                }
                count("taken", got.count)
                if !got.isEmpty { logger.notice("fleet: cameras taken", metadata: ["streams": "\(got.map(\.0).sorted())"]) }
            } catch {
                logger.error("fleet: could not take leases", metadata: ["error": "\(Self.describe(error))"])
            }
        }
        // Hand a camera to its first choice only while nobody watches it here, and only once
        // it has stayed `settle` seconds: a node that returns never cuts a viewer off.
        let give = state.withLock { st -> [String] in
            var out: [String] = []
            for (s, _) in st.held.sorted(by: { $0.key < $1.key }) {
                guard names.contains(s) else { out.append(s); continue } // removed, or now a publish stream
                guard out.count < 4, let first = Rendezvous.ranking(stream: s, nodes: live).first, first != me,
                      let since = st.heldSince[s], Double(now &- since) / 1e9 > settle else { continue }
                if w.viewers(s) == 0 { out.append(s) }
            }
            for s in out { st.held[s] = nil; st.heldSince[s] = nil }
            return out
        }
        if !give.isEmpty {
            await applyIfChanged() // stop reading first
            do {
                try await database.query("DELETE FROM leases WHERE node = \(me) AND stream = ANY(\(give)::text[])")
                count("handed", give.count)
                logger.notice("fleet: idle cameras handed to their first choice", metadata: ["streams": "\(give)"])
            } catch {
                logger.warning("fleet: could not give leases back; they lapse by themselves", metadata: ["error": "\(Self.describe(error))"])
            }
        }
        await applyIfChanged()
    }

    /// Tells the engine to make again the streams whose placement changed, when anything did.
    private func applyIfChanged() async {
        guard let w = wiring.withLock({ $0 }) else { return }
        let signature = state.withLock { st -> String? in
            var parts = st.held.keys.sorted().map { "held \($0)" }
            for (s, l) in st.leases.sorted(by: { $0.key < $1.key }) where l.node != settings.node && l.until > st.databaseNow && st.live.contains(l.node) {
                parts.append("\(s) at \(l.node) \(st.nodes[l.node]?.rtspURL ?? "-")")
            }
            let sig = parts.joined(separator: "\n")
            guard sig != st.applied else { return nil }
            st.applied = sig
            return sig
        }
        guard signature != nil else { return }
        await w.apply()
    }
}
