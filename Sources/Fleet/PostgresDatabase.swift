public import PostgresNIO
public import Logging
import Foundation
import NIOSSL
import Synchronization
import MediaCore

/// One PostgreSQL database (`catalog.postgres`), through postgres-nio's connection pool, which
/// runs for as long as this object: every query the fleet sends goes through `query`, counted.
public final class PostgresDatabase: Sendable {
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let logger: Logger
    /// Where it is, with no password (for logs and errors).
    public let redactedURL: String
    private let sent = Atomic<Int>(0)

    /// A problem with `catalog.postgres` itself or with reaching it, in one line.
    public struct SetupError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Connects lazily (the first query opens the first connection); `url` is
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
    public init(url: String, logger: Logger) throws(SetupError) {
        guard let u = URLComponents(string: url), let host = u.host, let user = u.user?.removingPercentEncoding else {
            throw SetupError(description: "catalog.postgres: expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
        }
        let database = String(u.path.dropFirst())
        let tls: PostgresClient.Configuration.TLS
        let mode = u.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        switch mode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw SetupError(description: "catalog.postgres: sslmode must be disable, prefer, require or verify-full, not \(mode)")
        }
        var c = PostgresClient.Configuration(host: host, port: u.port ?? 5432, username: user,
                                             password: u.password?.removingPercentEncoding, database: database.isEmpty ? nil : database, tls: tls)
        c.options.maximumConnections = 8
        c.options.connectTimeout = .seconds(5)
        // Keep-alive queries are left off: the fleet's own renewals keep its connections busy.
        c.options.keepAliveBehavior = nil
        var l = logger
        l[metadataKey: "catalog"] = "postgres"
        self.logger = l
        redactedURL = Redactor.redact(url)
        let client = PostgresClient(configuration: c, backgroundLogger: Logger(label: "liverelay.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.client = client
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    /// Stops the pool (open queries fail).
    public func close() { runner.cancel() }

    /// Queries sent since the start: the catalog's traffic.
    public var queriesSent: Int { sent.load(ordering: .relaxed) }

    /// How long a statement (or a transaction) may take, waiting for a connection included.
    static let deadline: Duration = .seconds(5)

    /// The database did not answer within `deadline`.
    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String { "the database did not answer within 5 s" }
    }

    /// Runs one statement; its rows, all read.
    @discardableResult
    func query(_ q: PostgresQuery) async throws -> [PostgresRow] {
        sent.add(1, ordering: .relaxed)
        let client = client, logger = logger
        return try await Self.withDeadline {
            var rows: [PostgresRow] = []
            for try await r in try await client.query(q, logger: logger) { rows.append(r) }
            return rows
        }
    }

    /// Runs `body` in one transaction on one connection (its statements counted one each).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Session) async throws -> T) async throws -> T {
        sent.add(2, ordering: .relaxed) // BEGIN and COMMIT
        return try await Self.withDeadline {
            try await self.client.withTransaction(logger: self.logger) { conn in
                try await body(Session(connection: conn, database: self))
            }
        }
    }

    /// `body`, cancelled after `deadline` (a pool waiting for a connection that never comes).
    static func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { g in
            g.addTask { try await body() }
            g.addTask {
                try await Task.sleep(for: deadline)
                return nil
            }
            defer { g.cancelAll() }
            guard let first = try await g.next(), let value = first else { throw TimedOut() }
            return value
        }
    }

    /// A connection inside a transaction.
    struct Session {
        let connection: PostgresConnection
        let database: PostgresDatabase

        @discardableResult
        func query(_ q: PostgresQuery) async throws -> [PostgresRow] {
            database.sent.add(1, ordering: .relaxed)
            var rows: [PostgresRow] = []
            for try await r in try await connection.query(q, logger: database.logger) { rows.append(r) }
            return rows
        }
    }

    /// Waits for notifications on `channel` on a connection of its own, calling `onNotify` with
    /// each payload, until cancelled; a lost connection is opened again after a second.
    func listen(_ channel: String, onReady: @escaping @Sendable () -> Void = {}, onNotify: @escaping @Sendable (String) async -> Void) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { conn in
                    try await conn.listen(on: channel) { notifications in
                        onReady()
                        for try await n in notifications { await onNotify(n.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("catalog: listening for changes failed; again in 1 s", metadata: ["channel": "\(channel)", "error": "\(String(reflecting: error).prefix(300))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}

extension PostgresDatabase {
    /// `listen` for tests: the payloads of `channel` until cancelled.
    public func listenForTests(_ channel: String, ready: @escaping @Sendable () -> Void, onNotify: @escaping @Sendable (String) -> Void) async {
        await listen(channel, onReady: ready) { onNotify($0) }
    }
}
