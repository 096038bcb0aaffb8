public import Access
public import Demux
import Wire
public import Decode
import MediaCore
import Foundation
import Yams

/// A malformed configuration: names the file, the key path and what is wrong.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public let file: String
    public let path: String
    public let problem: String
    public var description: String { "\(file): \(path.isEmpty ? "" : path + ": ")\(problem)" }
}

/// LiveRelay's configuration (YAML).
public struct Configuration: Sendable {
    public struct Stream: Sendable {
        public var name: String
        public var source: String
        public var title: String?
        /// The ops wall's group (a site, a team, a vehicle): the wall filters by it.
        public var group: String?
        /// The key a publisher of this stream presents (`?key=`), on the one-port ingest.
        public var publishKey: String?
        /// The passphrase an SRT reader of this stream gives (`srt_read_passphrase`, 10–79
        /// characters); nil: users in the stream ID, or anonymous reading, decide.
        public var srtReadPassphrase: String?
        /// `on_demand`: connect only while something consumes the stream; closed after
        /// `on_demand_idle` seconds (default 10) without.
        public var onDemandIdle: Double?
        public var sourceOptions = SourceOptions()
        /// Two slice threads by default, as ffmpeg's own low-delay decode uses slice threads:
        /// measured under 2 % packet loss over RTSP/UDP, one thread (one slice context) left 63 %
        /// of pictures with a readable stamp, two left 79–86 % (`bench latency --impair loss=2%`).
        public var decoderOptions: DecoderOptions = {
            var o = DecoderOptions()
            o.sliceThreads = 2
            return o
        }()
        /// nil: no preview for this stream.
        public var preview: PreviewSettings? = PreviewSettings()
        /// nil: no HLS for this stream.
        public var hls: HLSSettings?
        /// nil: no recording.
        public var record: RecordSettings?
        /// Destinations the stream is pushed to, without re-encoding.
        public var forward: [ForwardTarget] = []
        public var description: String?
        public var keywords: [String] = []
        /// Read capture times from the pictures (a stamped test source): the preview's
        /// capture → delivered latency. Off by default: it costs a barcode read per picture.
        public var measure = false
        /// Made or last set through the API (kept in the catalog), not by the file.
        public var madeByAPI = false
        /// `renditions`: the ladder below the source, each served as `NAME_RENDITION`.
        public var renditions: [RenditionSettings] = []
        /// `substream`: the camera's second, smaller stream (its own source and transport),
        /// served as `NAME_sub` and read only while something uses it; nil: none.
        public var substream: Substream?
        /// A rendition's or sub stream's stream: the stream it belongs to (its tile, its
        /// permissions, its node in a fleet).
        public var partOf: String?
        /// This stream is `partOf`'s sub stream (a camera's own second stream, not an encode).
        public var isSubstream = false
    }

    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// HTTPS (with HTTP/2 by ALPN) when set.
    public var tls: TLSSettings?
    /// `server.allowed_hosts`: Host header values answered (see `effectiveAllowedHosts`).
    public var allowedHosts: [String]?
    /// `server.trusted_proxies`: proxies in front (the nginx edge) whose `X-Forwarded-For`
    /// names the client that the failure limit counts.
    public var trustedProxies = TrustedProxies()
    /// Users and permissions; nil: no access control (loopback only).
    public var auth: AuthSettings?
    /// `server.limits`.
    public var limits = ServerLimits()
    public var streams: [Stream] = []
    /// `ingest`: the one-port publish servers.
    public var ingest = IngestSettings()
    /// `server.rtsp`; nil: off.
    public var rtsp: RTSPServerSettings?
    /// `server.webrtc`; nil: `off`.
    public var webrtc: WebRTCServerSettings? = WebRTCServerSettings()
    /// `catalog.path`: the SQLite catalog (API-made streams, recordings); nil: in the state
    /// directory (`serve --state-dir`, default /var/lib/liverelay).
    public var catalogPath: String?
    /// `recordings.min_free`: the free space kept on each disk that recordings are written
    /// to; below it the oldest recordings on that disk go first, of any stream. nil: no floor.
    public var recordingsMinFree: Int?
    /// `hooks`: events told to webhooks and commands.
    public var hooks = HookSettings()
    /// `talk.max_duration`: seconds one talk session may last before it is ended (a stuck
    /// button, a forgotten page).
    public var talkMaxDuration: Double = 120
    /// `catalog.postgres` with `node`: one node of a fleet; nil: a single server.
    public var fleet: FleetSettings?

    public init() {}

    /// Sets `server.listen` from `HOST:PORT`.
    public mutating func setListen(_ text: String, file: String) throws(ConfigError) {
        (listenHost, listenPort) = try Self.hostPort(text, path: "server.listen", file: file)
    }

    /// `HOST:PORT` (`[::1]:8554` too) of a listen key; the error names the key.
    static func hostPort(_ text: String, path: String, file: String) throws(ConfigError) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ConfigError(file: file, path: path, problem: "expected HOST:PORT, got \"\(text.prefix(100))\"")
        }
        return (String(decoding: text[..<colon].utf8.filter { $0 != 0x5B && $0 != 0x5D }, as: UTF8.self), port)
    }

    public static func load(file: String, sources: SourceOpener = SourceOpener()) throws(ConfigError) -> Configuration {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigError(file: file, path: "", problem: "cannot read the file (\((error as NSError).localizedDescription))")
        }
        return try parse(text, file: file, sources: sources)
    }

    /// Parses a configuration; source URLs are checked against `sources` (the schemes the
    /// program registered, and libavformat's).
    public static func parse(_ text: String, file: String = "config", sources: SourceOpener = SourceOpener()) throws(ConfigError) -> Configuration {
        let root: Node
        do {
            guard let n = try Yams.compose(yaml: text) else { throw ConfigError(file: file, path: "", problem: "empty configuration") }
            root = n
        } catch let e as ConfigError {
            throw e
        } catch {
            throw ConfigError(file: file, path: "", problem: "not valid YAML: \("\(error)".split(separator: "\n").first ?? "")")
        }
        let r = Reader(file: file)
        var config = Configuration()
        let top = try r.mapping(root, "", allowed: ["server", "auth", "ingest", "streams", "catalog", "recordings", "hooks", "node", "talk"])
        if let h = top["hooks"] { config.hooks = try HookSettings(config: h, r) }
        if let t = top["talk"] {
            let m = try r.mapping(t, "talk", allowed: ["max_duration"])
            if let d = m["max_duration"] { config.talkMaxDuration = try r.number(d, "talk.max_duration", 1...3600) }
        }
        if let rec = top["recordings"] {
            let m = try r.mapping(rec, "recordings", allowed: ["min_free"])
            if let f = m["min_free"] { config.recordingsMinFree = try r.bytes(f, "recordings.min_free") }
        }
        var postgres: String?
        if let c = top["catalog"] {
            let m = try r.mapping(c, "catalog", allowed: ["path", "postgres"])
            if let p = m["path"] {
                config.catalogPath = try r.string(p, "catalog.path")
                guard !(config.catalogPath ?? "").isEmpty else { throw ConfigError(file: file, path: "catalog.path", problem: "empty") }
            }
            if let p = m["postgres"] {
                guard config.catalogPath == nil else { throw ConfigError(file: file, path: "catalog.postgres", problem: "a catalog is either a file (path) or a database (postgres), not both") }
                postgres = try Self.postgresURL(p, r)
            }
        }
        config.fleet = try Self.fleetSettings(postgres: postgres, node: top["node"], r)
        if let ingest = top["ingest"] {
            config.ingest = try IngestSettings(config: ingest, r)
            // Defaults for streams made by their first publisher: a stream's keys, checked as one.
            if case .mapping(let m) = ingest, let d = m["defaults"] {
                guard case .mapping(var withSource) = d else { throw ConfigError(file: file, path: "ingest.defaults", problem: "expected a mapping of keys") }
                if withSource[Node("source")] != nil { throw ConfigError(file: file, path: "ingest.defaults.source", problem: "not allowed: streams made on publish take their publisher") }
                withSource[Node("source")] = Node("publish")
                config.ingest.defaults = try Stream(config: .mapping(withSource), name: "defaults", path: "ingest.defaults", r, sources: sources)
            }
        }
        if let server = top["server"] { try serverSettings(server, r, into: &config) }
        if let auth = top["auth"] { config.auth = try AuthSettings(config: auth, r) }
        guard let streamsNode = top["streams"] else { throw ConfigError(file: file, path: "streams", problem: "missing: at least one stream is needed") }
        let streams = try r.mapping(streamsNode, "streams", allowed: nil)
        for (name, node) in streams.sorted(by: { $0.key < $1.key }) {
            let path = "streams.\(name)"
            guard Self.isStreamName(name) else {
                throw ConfigError(file: file, path: path, problem: "stream names may use letters, digits, - and _ only")
            }
            let s = try Stream(config: node, name: name, path: path, r, sources: sources)
            config.streams.append(s)
        }
        if config.streams.isEmpty { throw ConfigError(file: file, path: "streams", problem: "at least one stream is needed") }
        // A rendition's stream must not take a configured stream's name.
        let names = Set(config.streams.map(\.name))
        for s in config.streams {
            for (i, r) in s.renditions.enumerated() where names.contains(RenditionSettings.streamName(s.name, r.name)) {
                throw ConfigError(file: file, path: "streams.\(s.name).renditions[\(i)].name",
                                  problem: "its stream \(RenditionSettings.streamName(s.name, r.name)) is configured already")
            }
            if s.substream != nil, names.contains(Substream.streamName(s.name)) {
                throw ConfigError(file: file, path: "streams.\(s.name).substream",
                                  problem: "its stream \(Substream.streamName(s.name)) is configured already (say substream: false to have none)")
            }
        }
        try config.checkIngest(file: file)
        return config
    }

    struct Reader {
        let file: String
        func mapping(_ node: Node, _ path: String, allowed: Set<String>?) throws(ConfigError) -> [String: Node] {
            guard case .mapping(let m) = node else { throw ConfigError(file: file, path: path, problem: "expected a mapping of keys") }
            var out: [String: Node] = [:]
            for (k, v) in m {
                guard case .scalar(let ks) = k else { throw ConfigError(file: file, path: path, problem: "keys must be plain strings") }
                let key = ks.string
                if let allowed, !allowed.contains(key) {
                    throw ConfigError(file: file, path: path.isEmpty ? key : "\(path).\(key)",
                                      problem: "unknown key (expected one of \(allowed.sorted().joined(separator: ", ")))")
                }
                out[key] = v
            }
            return out
        }
        func string(_ node: Node, _ path: String) throws(ConfigError) -> String {
            guard case .scalar(let s) = node else { throw ConfigError(file: file, path: path, problem: "expected a single value") }
            return s.string
        }
        func bool(_ node: Node, _ path: String) throws(ConfigError) -> Bool {
            let s = try string(node, path)
            switch s.lowercased() {
            case "true", "yes", "on": return true
            case "false", "no", "off": return false
            default: throw ConfigError(file: file, path: path, problem: "expected true or false, got \"\(s)\"")
            }
        }
        /// Seconds, from `1.5`, `200ms`, `2s`, `30m` or `1h`.
        func duration(_ node: Node, _ path: String, _ range: ClosedRange<Double>) throws(ConfigError) -> Double {
            let s = try string(node, path).trimmingASCIISpaces().lowercased()
            let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
            var value: Double?
            if let v = Double(s) { value = v }
            for (suffix, scale) in units where value == nil && s.hasSuffix(suffix) {
                if let v = Double(s.dropLast(suffix.count)) { value = v * scale }
            }
            guard let value, range.contains(value) else {
                throw ConfigError(file: file, path: path, problem: "expected a duration such as 200ms, 2s, 30m or 1h from \(range.lowerBound) s to \(range.upperBound) s, got \"\(s)\"")
            }
            return value
        }
        /// Bytes, from `1048576`, `500MB`, `2GiB`, `1TB` (K/M/G/T: powers of 1000, KiB…TiB: of 1024).
        func bytes(_ node: Node, _ path: String) throws(ConfigError) -> Int {
            let s = try string(node, path).trimmingASCIISpaces()
            let units: [(String, Double)] = [("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776),
                                             ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1)]
            var value: Double? = Double(s)
            for (suffix, scale) in units where value == nil && s.hasSuffix(suffix) {
                if let v = Double(s.dropLast(suffix.count).trimmingASCIISpaces()) { value = v * scale }
            }
            guard let value, value >= 1, value <= 1e18 else {
                throw ConfigError(file: file, path: path, problem: "expected a size such as 500MB or 2GiB, got \"\(s.prefix(100))\"")
            }
            return Int(saturating: value)
        }
        func strings(_ node: Node, _ path: String) throws(ConfigError) -> [String] {
            if case .sequence(let seq) = node {
                var out: [String] = []
                for (i, n) in seq.enumerated() { out.append(try string(n, "\(path)[\(i)]")) }
                return out
            }
            return try string(node, path).split(separator: ",").map { String($0.trimmingASCIISpaces()) }
        }
        func number(_ node: Node, _ path: String, _ range: ClosedRange<Double>) throws(ConfigError) -> Double {
            let s = try string(node, path)
            guard let v = Double(s), range.contains(v) else {
                throw ConfigError(file: file, path: path, problem: "expected a number from \(range.lowerBound) to \(range.upperBound), got \"\(s)\"")
            }
            return v
        }
        func choice<T: RawRepresentable & CaseIterable>(_ node: Node, _ path: String, _ type: T.Type) throws(ConfigError) -> T where T.RawValue == String {
            let s = try string(node, path)
            guard let v = T(rawValue: s) else {
                let names = T.allCases.map(\.rawValue)
                let expected = names.count == 2 ? "\(names[0]) or \(names[1])" : names.dropLast().joined(separator: ", ") + " or " + names.last!
                throw ConfigError(file: file, path: path, problem: "expected \(expected), got \"\(s)\"")
            }
            return v
        }
    }
}
