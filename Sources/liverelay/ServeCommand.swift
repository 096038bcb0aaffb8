import ArgumentParser
import Relay
import Serve
import Logging
import MediaCore
import Foundation
import Glibc
import StampedSource
import Catalog

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run every configured stream with its preview, API and metrics over HTTP."
    )

    @Option(help: "Configuration file (YAML).")
    var config: String = "configs/demo.yaml"

    @Option(help: "Override server.listen (HOST:PORT).")
    var listen: String?

    @OptionGroup var logging: LoggingOptions

    @Option(help: "Where LiveRelay keeps state across restarts (the catalog, unless catalog.path says otherwise).")
    var stateDir: String = "/var/lib/liverelay"

    func run() async throws {
        logging.bootstrap()
        var configuration: Configuration
        do {
            configuration = try Configuration.load(file: config, sources: .liverelay)
            if let listen { try configuration.setListen(listen, file: "--listen") }
            try configuration.validateExposure(file: config)
        } catch {
            LoggingSetup.fail("\(error)", format: logging.logFormat)
            throw ExitCode(2)
        }
        let logger = Logger(label: "liverelay")
        Self.raiseDescriptorLimit(logger: logger)
        MemoryTuning.keepLargeBuffersOutOfTheHeap()
        do {
            try await serve(configuration, logger: logger)
        } catch let e as TLSSetupError {
            LoggingSetup.fail("\(config): \(e)", format: logging.logFormat)
            throw ExitCode(2)
        } catch let e as FleetSetupError {
            LoggingSetup.fail("\(config): \(e)", format: logging.logFormat)
            throw ExitCode(1)
        } catch {
            // Anything else that stops the server (a port taken, a key that cannot be read) is
            // said the same way, not by ArgumentParser's plain "Error:" line.
            LoggingSetup.fail("\(error)", format: logging.logFormat)
            throw ExitCode(1)
        }
    }

    /// Viewers, sources, recordings and segments each hold descriptors: the soft limit goes up
    /// to the hard one, and what is left is said once at start.
    static func raiseDescriptorLimit(logger: Logger) {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        logger.info("file descriptors available", metadata: ["limit": "\(limit.rlim_cur)"])
    }

    func serve(_ configuration: Configuration, logger: Logger) async throws {
        let c = configuration
        let scheme = c.tls == nil ? "http" : "https"
        let file = config, listen = listen
        let reload: @Sendable () throws -> Configuration = {
            var c = try Configuration.load(file: file, sources: .liverelay)
            if let listen { try c.setListen(listen, file: "--listen") }
            try c.validateExposure(file: file)
            return c
        }
        // The catalog keeps the API's stream changes; without one (a directory it cannot write)
        // they last as long as the process, and the log says so once.
        let path = c.catalogPath ?? (stateDir as NSString).appendingPathComponent("catalog.sqlite")
        let catalog: SQLiteCatalog?
        if c.fleet != nil {
            catalog = nil // the fleet's database is the catalog
        } else { do {
            catalog = try await SQLiteCatalog.open(path: path)
        } catch {
            logger.warning("catalog: cannot open it; API changes to streams are not kept across restarts", metadata: ["path": "\(path)", "error": "\(error)"])
            catalog = nil
        } }
        defer { if let catalog { Task { await catalog.close() } } }
        // The node's signing key (evidence bundles), made at the first start.
        // A key file that is there but not a key stops serve: signing with another key would
        // make every bundle fail against the key people hold.
        let nodeKey: NodeKey?
        let keyFile = (stateDir as NSString).appendingPathComponent(NodeKey.fileName)
        do {
            nodeKey = try NodeKey.loadOrCreate(directory: stateDir)
        } catch where FileManager.default.fileExists(atPath: keyFile) {
            throw ValidationError("\(error)")
        } catch {
            logger.warning("evidence: no node key kept; bundles are signed with a key for this run only (GET /api/keys)", metadata: ["error": "\(error)"])
            nodeKey = nil
        }
        // The banner: lines of text on stdout, or records with the URLs as keys (--log-format).
        let banner = LoggingSetup.banner(format: logging.logFormat)
        try await LiveRelayServer.run(configuration: configuration, sources: .liverelay, captureAge: StampedSource.captureAge, reload: reload,
                                      catalog: catalog, nodeKey: nodeKey, logger: logger, banner: banner) { port in
            let host = c.listenHost == "0.0.0.0" ? "127.0.0.1" : c.listenHost
            let base = "\(scheme)://\(host):\(port)"
            banner.notice("LiveRelay listening on \(base)/", metadata: ["url": "\(base)/"])
            banner.notice("  the wall, every stream (click a tile, keys 1-9, f full screen, m sound, b bookmark): \(base)/", metadata: ["wall": "\(base)/"])
            // What each stream offers, by URL.
            for s in c.streams {
                var offers: [(key: String, text: String, url: String)] = []
                if s.preview != nil { offers.append(("preview", "preview", "\(base)/streams/\(s.name)/")) }
                if s.hls != nil { offers.append(("watch", "public page (\(s.hls?.variant == .lowLatency ? "LL-HLS" : "HLS"))", "\(base)/streams/\(s.name)/watch")) }
                // On port 0 the RTSP server's own banner line says which port it got.
                if let rtsp = c.rtsp, rtsp.port != 0 { offers.append(("rtsp", "RTSP", "rtsp://\(rtsp.host == "0.0.0.0" ? "127.0.0.1" : rtsp.host):\(rtsp.port)/\(s.name)")) }
                if s.record != nil { offers.append(("recordings", "recordings on a timeline", "\(base)/?only=\(s.name)")) }
                if offers.isEmpty { offers.append(("api", "", "\(base)/api/streams/\(s.name)")) }
                var metadata: Logger.Metadata = ["stream.name": "\(s.name)"]
                for o in offers { metadata[o.key] = "\(o.url)" }
                let said = offers.map { $0.text.isEmpty ? $0.url : "\($0.text) \($0.url)" }.joined(separator: " · ")
                banner.notice("  \(s.name): \(said)", metadata: metadata)
            }
            banner.notice("  the API \(base)/api/streams · described \(base)/api/openapi.json · events \(base)/api/events · metrics \(base)/metrics",
                          metadata: ["api": "\(base)/api/streams", "openapi": "\(base)/api/openapi.json", "events": "\(base)/api/events",
                                     "metrics": "\(base)/metrics"])
        }
    }
}
