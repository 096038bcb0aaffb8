import Access
import Foundation
import MediaCore
import Yams

/// `ingest`: LiveRelay's own publish ports, shared by many streams.
///
/// ```yaml
/// ingest:
///   rtmp: {listen: "0.0.0.0:1935", app: live, publish_key: "…"}
///   srt: {listen: "0.0.0.0:8890", passphrase: "…"}
/// streams:
///   phone1: {source: publish, publish_key: "…"}     # rtmp://host:1935/live/phone1?key=…
///                                                  # srt://host:8890?streamid=phone1&passphrase=…
/// ```
public struct IngestSettings: Sendable {
    public var rtmp: RTMPIngest?
    public var srt: SRTIngest?

    /// `ingest.srt`: one UDP port for many SRT callers, routed by their `streamid`
    /// (`#!::r=NAME,m=publish`, `publish:NAME`, or `NAME`). A caller must have its stream's
    /// passphrase: the stream's own `publish_key`, else `passphrase` here (both 10–79
    /// characters, SRT's limits); or, where the `auth` section has users, a user with the
    /// publish action in the stream ID (`#!::r=NAME,m=publish,u=USER,s=PASSWORD`).
    public struct SRTIngest: Sendable {
        public var host = "127.0.0.1"
        public var port = 8890
        public var passphrase: String?
        public var autoCreate = false
        /// The receiver latency this side asks for (SRT uses the larger of both sides').
        public var latency = 0.02
    }

    public struct RTMPIngest: Sendable {
        public var host = "127.0.0.1"
        public var port = 1935
        /// The application part of publish URLs (`rtmp://host/APP/STREAM`).
        public var app = "live"
        /// A key every publisher may present (a stream's own `publish_key` also opens it).
        public var publishKey: String?
        /// A publish to an unknown stream name creates the stream (outputs from `ingest.defaults`).
        public var autoCreate = false
        /// RTMPS: the port speaks TLS (with `server.tls`'s certificate), as OBS, IVS's broadcast
        /// SDK and phone apps publish to `rtmps://`.
        public var tls = false
    }

    /// `ingest.defaults`: a stream's keys (no `source`) for streams created on first publish.
    public var defaults: Configuration.Stream?

    /// The settings of a stream created by its first publisher.
    public func autoCreated(_ name: String) -> Configuration.Stream {
        var s = defaults ?? Configuration.Stream(name: name, source: "")
        s.name = name
        s.source = Configuration.publishURL(stream: name)
        s.publishKey = nil
        return s
    }

    public init() {}
}

extension Configuration {
    /// What a stream whose `source` is `publish` is fed by: the one-port ingest servers.
    public static func publishURL(stream: String) -> String { "publish://\(stream)" }

    /// Stream names (and the RTMP app): letters, digits, - and _, not empty.
    public static func isStreamName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    }

    public var publishStreams: [Stream] { streams.filter { $0.source.hasPrefix("publish://") } }


    /// Publish streams need an ingest server; one bound beyond loopback needs a key for every
    /// stream (a global one, the stream's own, or users allowed to publish).
    func checkIngest(file: String) throws(ConfigError) {
        let publish = publishStreams
        if let srt = ingest.srt {
            // A stream's publish_key is its SRT passphrase: SRT takes 10 to 79 characters.
            if let short = publish.first(where: { $0.publishKey.map { !(10...79).contains($0.utf8.count) } ?? false }) {
                throw ConfigError(file: file, path: "streams.\(short.name).publish_key",
                                  problem: "with ingest.srt, a stream's publish_key is its SRT passphrase: 10 to 79 characters")
            }
            if !Self.isLoopback(host: srt.host) && srt.passphrase == nil {
                if srt.autoCreate {
                    throw ConfigError(file: file, path: "ingest.srt.passphrase",
                                      problem: "ingest.srt.auto_create beyond loopback needs ingest.srt.passphrase (anyone could make streams)")
                }
                let usersMayPublish = auth?.users.contains { u in u.permissions.contains { $0.action == .publish } } ?? false
                if !usersMayPublish, let open = publish.first(where: { $0.publishKey == nil }) {
                    throw ConfigError(file: file, path: "ingest.srt.passphrase",
                                      problem: "ingest.srt listens beyond loopback and stream \"\(open.name)\" has no publish_key: set ingest.srt.passphrase, the stream's publish_key, or users with the publish action")
                }
            }
        }
        // Without ingest.rtmp, publish streams take HLS uploads over HTTP (whose access rules apply).
        guard let rtmp = ingest.rtmp else { return }
        if rtmp.tls && tls == nil {
            throw ConfigError(file: file, path: "ingest.rtmp.tls", problem: "RTMPS uses server.tls's certificate: set server.tls (cert, key)")
        }
        if Self.isLoopback(host: rtmp.host) || rtmp.publishKey != nil { return }
        if rtmp.autoCreate {
            throw ConfigError(file: file, path: "ingest.rtmp.publish_key",
                              problem: "ingest.rtmp.auto_create beyond loopback needs ingest.rtmp.publish_key (anyone could make streams)")
        }
        let usersMayPublish = auth?.users.contains { u in u.permissions.contains { $0.action == .publish } } ?? false
        if usersMayPublish { return }
        if let open = publish.first(where: { $0.publishKey == nil }) {
            throw ConfigError(file: file, path: "ingest.rtmp.publish_key",
                              problem: "ingest.rtmp listens beyond loopback and stream \"\(open.name)\" has no publish_key: set ingest.rtmp.publish_key, the stream's publish_key, or users with the publish action")
        }
    }
}

extension IngestSettings {
    /// The `ingest` section.
    init(config node: Node, _ r: Configuration.Reader) throws(ConfigError) {
        var settings = IngestSettings()
        let m = try r.mapping(node, "ingest", allowed: ["rtmp", "srt", "defaults"])
        if let srt = m["srt"] {
            let x = try r.mapping(srt, "ingest.srt", allowed: ["listen", "passphrase", "auto_create", "latency"])
            var s = IngestSettings.SRTIngest()
            guard let l = x["listen"] else { throw ConfigError(file: r.file, path: "ingest.srt.listen", problem: "missing (HOST:PORT)") }
            (s.host, s.port) = try Configuration.hostPort(try r.string(l, "ingest.srt.listen"), path: "ingest.srt.listen", file: r.file)
            if let p = x["passphrase"] {
                let phrase = try r.string(p, "ingest.srt.passphrase")
                guard (10...79).contains(phrase.utf8.count) else {
                    throw ConfigError(file: r.file, path: "ingest.srt.passphrase", problem: "SRT passphrases are 10 to 79 characters")
                }
                s.passphrase = phrase
            }
            if let a = x["auto_create"] { s.autoCreate = try r.bool(a, "ingest.srt.auto_create") }
            if let d = x["latency"] { s.latency = try r.duration(d, "ingest.srt.latency", 0...10) }
            settings.srt = s
        }
        if let rtmp = m["rtmp"] {
            let x = try r.mapping(rtmp, "ingest.rtmp", allowed: ["listen", "app", "publish_key", "auto_create", "tls"])
            var s = IngestSettings.RTMPIngest()
            guard let l = x["listen"] else { throw ConfigError(file: r.file, path: "ingest.rtmp.listen", problem: "missing (HOST:PORT)") }
            (s.host, s.port) = try Configuration.hostPort(try r.string(l, "ingest.rtmp.listen"), path: "ingest.rtmp.listen", file: r.file)
            if let a = x["app"] {
                s.app = try r.string(a, "ingest.rtmp.app")
                guard Configuration.isStreamName(s.app) else {
                    throw ConfigError(file: r.file, path: "ingest.rtmp.app", problem: "letters, digits, - and _ only")
                }
            }
            if let t = x["tls"] { s.tls = try r.bool(t, "ingest.rtmp.tls") }
            if let k = x["publish_key"] {
                s.publishKey = try r.string(k, "ingest.rtmp.publish_key")
            }
            if let a = x["auto_create"] { s.autoCreate = try r.bool(a, "ingest.rtmp.auto_create") }
            settings.rtmp = s
        }
        self = settings
    }
}
