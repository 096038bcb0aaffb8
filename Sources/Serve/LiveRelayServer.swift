public import Relay
public import Logging
public import ServiceLifecycle
import Access
import Fleet
import Demux
import IngestServer
import RTSPServer
import WebRTC
import RelayServer
import Foundation
import MediaCore
import NIOSSL
import UnixSignals

/// The program `liverelay serve` runs: the engine, one authorizer, and every server — HTTP
/// (RelayServer's routes), the one-port RTMP and SRT ingests, the RTSP server — with RTMPS's and
/// HTTPS's certificate, until SIGINT/SIGTERM, then stops them gracefully. Each server gets the
/// authorizer directly; none reaches another through a shared object.
public enum LiveRelayServer {
    /// `file` with the catalog's API changes layered on; a change that no longer applies, or a
    /// catalog that cannot be read, is said in one line and the rest runs.
    /// Files a recorder left uncatalogued (the process was killed while it wrote them) are
    /// catalogued before the streams start, so that they are found, played and chained; they
    /// play up to their last whole fragment.
    static func recover(_ configuration: Configuration, catalog: any CatalogStore, logger: Logger) async {
        let streams = configuration.streams.compactMap { s in s.record.map { (name: s.name, directory: $0.path) } }
        guard !streams.isEmpty else { return }
        do {
            let r = try await RecordingReindex.run(catalog: catalog, streams: streams)
            for p in r.added { logger.warning("record: a file left by an unclean stop is catalogued", metadata: ["file": "\(p)"]) }
            for p in r.unreadable { logger.warning("record: a file left by an unclean stop cannot be read; not catalogued", metadata: ["file": "\(p)"]) }
        } catch {
            logger.error("catalog: cannot look for uncatalogued recordings", metadata: ["error": "\(error)"])
        }
    }

    static func layered(_ file: Configuration, catalog: (any CatalogStore)?, sources: SourceOpener, logger: Logger) async -> Configuration {
        guard let catalog else { return file }
        do {
            let changes = try await catalog.streamChanges()
            let (c, problems) = file.layering(changes, sources: sources)
            for p in problems { logger.error("catalog: \(p)") }
            if !changes.isEmpty { logger.notice("catalog: API changes applied over the file", metadata: ["changes": "\(changes.count)"]) }
            return c
        } catch {
            logger.error("catalog: cannot read the API's stream changes; the file's streams run", metadata: ["error": "\(error)"])
            return file
        }
    }

    /// - Parameters:
    ///   - configuration: the file's; the catalog's API changes are layered on it here (and at
    ///     each reload).
    ///   - reload: reads the configuration again (on SIGHUP: streams added, removed or changed
    ///     are applied; unchanged ones keep running).
    ///   - catalog: keeps what the API changes across restarts; nil: nothing is kept.
    ///   - nodeKey: signs evidence bundles; nil: a key for this run only.
    ///   - banner: where each server says where it listens (`notice`); nil: `logger`. Serve
    ///     itself writes nothing to stdout or stderr.
    /// What `serve` checks before it starts anything, beyond the file itself: the auth
    /// section's keys (a JWKS file or URL, read once) and the TLS certificate and key. Throws the
    /// first problem, naming its key.
    public static func check(_ configuration: Configuration, logger: Logger) async throws {
        Redactor.remember(secrets: configuration.secrets)
        _ = try await authorizer(configuration, engine: nil, logger: logger)
        if let tls = configuration.tls { _ = try CertificateStore.load(tls) }
    }

    public static func run(configuration file: Configuration, sources: SourceOpener = SourceOpener(), captureAge: CaptureAgeReader? = nil,
                           reload: (@Sendable () throws -> Configuration)? = nil, catalog: (any CatalogStore)? = nil, nodeKey: NodeKey? = nil,
                           logger: Logger, banner: Logger? = nil, onListening: @escaping @Sendable (Int) -> Void) async throws {
        // Parsing writes nowhere: the secrets it found are masked in every line from here on.
        Redactor.remember(secrets: file.secrets)
        var catalogChoice = catalog
        var sourcesChoice = sources
        // A fleet node: the shared database is the catalog, and a stream no live node reads
        // yet says so when opened.
        var fleet: FleetNode?
        if let f = file.fleet {
            let node = try await Self.joinFleet(f, file, logger: logger)
            catalogChoice = node.catalog
            fleet = node
            sourcesChoice.register(scheme: FleetNode.waitingScheme, open: { url, _ throws(IngestError) in
                throw IngestError(.unreachable, source: url, stage: "opening", detail: "no live node of the fleet reads this stream yet")
            }, validate: { _ in nil })
        }
        let catalog = catalogChoice, sources = sourcesChoice
        let configuration = await layered(file, catalog: catalog, sources: sources, logger: logger)
        if let catalog {
            // A node recovers only the files in its own directories.
            var own = configuration
            if let f = file.fleet {
                own.streams = own.streams.map { s in
                    var s = s
                    if let p = s.record?.path { s.record?.path = f.recordDirectory(p) }
                    return s
                }
            }
            await recover(own, catalog: catalog, logger: logger)
        }
        let engine = RelayEngine(configuration: configuration, sources: sources, captureAge: captureAge, catalog: catalog,
                                 features: RelayEngine.standardFeatures + [{ _ in WHIPPushFeature() }], logger: logger)
        let authorizer = try await authorizer(configuration, engine: engine, logger: logger)
        let metrics = RelayMetrics(authorizer: authorizer)
        let limits = configuration.limits
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: EngineService(engine: engine))]
        if let fleet {
            await engine.place(with: fleet)
            let fileNow = file
            let sourcesNow = sources
            try await fleet.start(FleetNode.Wiring(
                streams: { engine.streams },
                stream: { engine.settings($0) },
                viewers: { name in engine.hubs[name]?.outputs.filter { $0.kind.isViewer }.count ?? 0 },
                apply: { await engine.applyPlacement() },
                streamsChanged: {
                    // Another node (or this one) changed a stream through the API: the same
                    // layering as at start, applied where it changed.
                    let base = (try? reload?()) ?? fileNow
                    let r = await engine.reload(await layered(base, catalog: catalog, sources: sourcesNow, logger: logger))
                    if !(r.added.isEmpty && r.removed.isEmpty && r.changed.isEmpty) {
                        logger.notice("fleet: stream changes applied", metadata: ["added": "\(r.added)", "removed": "\(r.removed)", "changed": "\(r.changed)"])
                    }
                }))
            // Stopped after the engine (services stop in reverse order): leases are given back
            // once nothing here reads their cameras.
            services.insert(.init(service: FleetService(node: fleet)), at: 0)
        }
        // SIGHUP: the configuration's streams (applied where changed) and the certificate.
        var onHangup: [@Sendable () async -> Void] = []
        if let reload {
            onHangup.append {
                SystemdNotifier.reloading()
                defer { SystemdNotifier.reloaded(status: "serving \(engine.hubs.count) streams") }
                do {
                    let r = await engine.reload(await layered(try reload(), catalog: catalog, sources: sources, logger: logger))
                    logger.notice("configuration reloaded", metadata: ["added": "\(r.added)", "removed": "\(r.removed)",
                                                                      "changed": "\(r.changed)", "unchanged": "\(r.unchanged.count)",
                                                                      "failed": "\(r.failed.keys.sorted())"])
                } catch {
                    logger.error("configuration not reloaded; the running one stays", metadata: ["error": "\(error)"])
                }
            }
        }
        // HTTPS and RTMPS share the certificate, re-read on SIGHUP.
        let certificates = try configuration.tls.map { try CertificateStore($0) }
        if let certificates {
            onHangup.append {
                do {
                    try certificates.reload()
                    logger.info("tls: certificate reloaded", metadata: ["cert": "\(certificates.settings.certificate)"])
                } catch {
                    logger.error("tls: certificate not reloaded; the previous one stays", metadata: ["error": "\(error)"])
                }
            }
        }
        if let rtmp = configuration.ingest.rtmp {
            let tls = try rtmp.tls ? certificates.map { try NIOSSLContext(configuration: $0.serverConfiguration()) } : nil
            let ingest = RTMPIngestServer(settings: rtmp, engine: engine, logger: logger, tls: tls, authorizer: authorizer)
            services.append(.init(service: ListenerService(name: "RTMP ingest", host: rtmp.host, start: { try await ingest.start() },
                                                           url: { host, port in ("\(rtmp.tls ? "rtmps" : "rtmp")://\(host):\(port)/\(rtmp.app)/", "") },
                                                           stop: { await ingest.stop() }, banner: banner ?? logger)))
            metrics.watchIngest("rtmp") { ingest.refusals }
        }
        if let srt = configuration.ingest.srt {
            let ingest = SRTServer(settings: srt, engine: engine, logger: logger, authorizer: authorizer)
            services.append(.init(service: ListenerService(name: "SRT ingest", host: srt.host, start: { try ingest.start() },
                                                           url: { host, port in ("srt://\(host):\(port)", " (streamid=NAME)") },
                                                           stop: { ingest.stop() }, banner: banner ?? logger)))
            metrics.watchIngest("srt") { ingest.refusals }
        }
        if let rtsp = configuration.rtsp {
            let rtspServer = RTSPServer(engine: engine, host: rtsp.host, port: rtsp.port, maxConnections: limits.connections,
                                        stallTimeout: limits.writeStallTimeout, sessionTimeout: rtsp.sessionTimeout,
                                        logger: logger, authorizer: authorizer)
            services.append(.init(service: ListenerService(name: "RTSP server", host: rtsp.host, start: { try await rtspServer.start() },
                                                           url: { host, port in ("rtsp://\(host):\(port)/", "") },
                                                           stop: { await rtspServer.stop() }, banner: banner ?? logger)))
        }
        // WebRTC's UDP port is bound before HTTP takes offers for it.
        var webrtc: WebRTCServer?
        if let w = configuration.webrtc {
            let server = try await WebRTCServer.start(.init(host: w.host ?? configuration.listenHost, port: w.port, hosts: w.hosts,
                                                            sessionsPerClient: limits.viewersPerClient, tcpPort: w.tcpPort,
                                                            iceServers: w.iceServers),
                                                      logger: logger)
            webrtc = server
            metrics.watchWebRTC { server.figures }
            services.append(.init(service: WebRTCService(server: server, banner: banner ?? logger)))
        }
        // systemd (Type=notify) is told the server is ready once HTTP listens, and that it stops.
        let server = try await RelayHTTP.service(engine: engine, metrics: metrics, authorizer: authorizer,
                                                 tls: try certificates?.serverConfiguration(), webrtc: webrtc, nodeKey: nodeKey ?? .ephemeral(),
                                                 logger: logger) { port in
            onListening(port)
            SystemdNotifier.ready(status: "serving \(engine.hubs.count) streams on port \(port)")
        }
        if !onHangup.isEmpty { services.append(.init(service: HangupService(actions: onHangup))) }
        // A graceful shutdown stops services in reverse order, each before the next: the engine
        // first (streams end, so do event streams, previews and playlists), then the HTTP server,
        // which waits for its open responses. With HTTP last in this list it went first and
        // waited for ever on an `/api/events` client, whose stream ends only when the engine stops.
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: server)] + services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }
}

extension LiveRelayServer {
    /// The one authorizer of every server, told what it needs of the engine's streams: which
    /// stream a rendition comes from, and each door's publish keys (RTMP: the global key and the
    /// stream's; SRT: the stream's passphrase, else the global one; WHIP and HLS upload: the
    /// stream's, given as a bearer token).
    static func authorizer(_ configuration: Configuration, engine: RelayEngine?, logger: Logger) async throws -> Authorizer {
        let rtmpKey = configuration.ingest.rtmp?.publishKey
        let srtPassphrase = configuration.ingest.srt?.passphrase
        let streams = AccessStreams(
            parent: { name in engine?.settings(name)?.partOf },
            publishKeys: { name, door in
                let own = engine?.settings(name)?.publishKey
                switch door {
                case .rtmp: return [rtmpKey, own].compactMap { $0 }
                case .srt: return [own ?? srtPassphrase].compactMap { $0 }
                // WHIP and HLS uploads: the stream's own key, as a bearer token (OBS's WHIP).
                case .http, .webrtc: return [own].compactMap { $0 }
                case .websocket, .rtsp: return []
                }
            },
            // A rendition or sub stream is read with its camera's passphrase unless it has one.
            readPassphrase: { name in
                guard let s = engine?.settings(name) else { return nil }
                return s.srtReadPassphrase ?? s.partOf.flatMap { engine?.settings($0)?.srtReadPassphrase }
            })
        return try await Authorizer(auth: configuration.auth, allowedHosts: configuration.effectiveAllowedHosts,
                                    trustedProxies: configuration.trustedProxies, streams: streams,
                                    fetchJWKS: { url in
                                        switch await BoundedHTTP.send(method: "GET", url: url, headers: [("Accept", "application/json")],
                                                                      timeout: 5, maxBody: 1 << 20) {
                                        case .success(let a): return .success((a.status, a.body))
                                        case .failure(let f): return .failure(JWKSFetchFailure(Redactor.scrub(f.description)))
                                        }
                                    },
                                    logger: logger)
    }
}

extension LiveRelayServer {
    /// Connects to the fleet's database and makes its tables; a database that cannot be
    /// reached is said in one line (the process stops: its supervisor starts it again).
    static func joinFleet(_ f: FleetSettings, _ c: Configuration, logger: Logger) async throws -> FleetNode {
        let database: PostgresDatabase
        do {
            database = try PostgresDatabase(url: f.postgres, logger: logger)
        } catch {
            throw FleetSetupError(description: "\(error)")
        }
        let catalog = PostgresCatalog(database: database)
        do {
            try await catalog.migrate()
        } catch {
            database.close()
            throw FleetSetupError(description: "catalog.postgres (\(database.redactedURL)): \(FleetNode.describe(error))")
        }
        let host = ["0.0.0.0", "::"].contains(c.listenHost) ? "127.0.0.1" : c.listenHost
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let url = f.url ?? "\(c.tls == nil ? "http" : "https")://\(bracketed):\(c.listenPort)"
        let rtsp = f.rtspURL ?? c.rtsp.map { r in
            let h = ["0.0.0.0", "::"].contains(r.host) ? "127.0.0.1" : r.host
            return "rtsp://\(h.contains(":") ? "[\(h)]" : h):\(r.port)"
        }
        if rtsp == nil {
            logger.warning("fleet: this node has no RTSP server (server.rtsp.listen): the other nodes cannot pull its cameras for their viewers")
        }
        return FleetNode(settings: f, catalog: catalog, url: url, rtspURL: rtsp, logger: logger)
    }
}

/// The fleet's database cannot be used: says why, in one line.
public struct FleetSetupError: Error, CustomStringConvertible {
    public let description: String
}

/// The node's place in the fleet, for as long as the server runs; leaves it (leases given
/// back) after the engine stopped.
struct FleetService: Service {
    let node: FleetNode
    func run() async throws {
        try? await gracefulShutdown()
        await node.stop()
    }
}

/// The TLS files cannot be used: says which and why, in one line.
public struct TLSSetupError: Error, CustomStringConvertible {
    public let description: String
}

/// Starts every stream; on graceful shutdown stops them (playlists end, recordings close, the
/// origin gets the ended playlist), which also ends preview responses.
struct EngineService: Service {
    let engine: RelayEngine
    func run() async throws {
        engine.start()
        try? await gracefulShutdown()
        SystemdNotifier.stopping()
        await engine.stop()
    }
}

/// A listener (the RTMP and SRT ingests, the RTSP server) for as long as the server runs: once
/// bound, it says where (the port the system gave, for a listen port of 0).
struct ListenerService: Service {
    /// "RTMP ingest", said before "listening on URL".
    let name: String
    let host: String
    /// Binds; returns the port.
    let start: @Sendable () async throws -> Int
    /// The URL for the bound host and port (IPv6 hosts in brackets), and words said after it.
    let url: @Sendable (_ host: String, _ port: Int) -> (url: String, after: String)
    let stop: @Sendable () async -> Void
    let banner: Logger

    func run() async throws {
        let port = try await start()
        let (url, after) = url(host.contains(":") ? "[\(host)]" : host, port)
        banner.notice("\(name) listening on \(url)\(after)", metadata: ["url": "\(url)"])
        try? await gracefulShutdown()
        await stop()
    }
}

/// The WebRTC server's UDP port (`server.webrtc`), for as long as the server runs.
struct WebRTCService: Service {
    let server: WebRTCServer
    let banner: Logger
    func run() async throws {
        let host = server.settings.host.contains(":") ? "[\(server.settings.host)]" : server.settings.host
        let tcp = server.tcpPort.map { ", ICE-TCP on tcp://\(host):\($0)" } ?? ""
        var metadata: Logger.Metadata = ["url": "udp://\(host):\(server.port)", "candidates": "\(server.candidates.joined(separator: " "))"]
        if let t = server.tcpPort { metadata["tcp"] = "tcp://\(host):\(t)" }
        banner.notice("WebRTC (WHEP) on udp://\(host):\(server.port)\(tcp), candidates \(server.candidates.joined(separator: " "))", metadata: metadata)
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// Runs every action on each SIGHUP, in order, until shutdown.
struct HangupService: Service {
    let actions: [@Sendable () async -> Void]

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // Ends with the server: cancelled on graceful shutdown, which ends the signal loop.
        try? await cancelWhenGracefulShutdown {
            for await _ in hangups {
                for action in actions { await action() }
            }
        }
    }
}
