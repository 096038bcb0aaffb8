public import Foundation
import Glibc

/// A PostgreSQL server of its own (Debian's `postgresql-15`) in a temporary directory, on a
/// free loopback port: for the fleet's tests and `bench fleet`. As root it runs as the
/// `postgres` user (the server refuses root). Trust authentication, no fsync: a scratch database.
public final class PostgresServer: @unchecked Sendable {
    // Safety: immutable after init.
    public let port: Int
    public let directory: URL
    private let child: ChildProcess
    private let bin: String
    private let asUser: [String]

    /// `postgres://liverelay@127.0.0.1:PORT/postgres`.
    public var url: String { "postgres://liverelay@127.0.0.1:\(port)/postgres" }

    public init() throws {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted()
        guard let v = versions.last else { throw BenchError("PostgreSQL is not installed (apt install postgresql; scripts/setup.sh does)") }
        bin = "/usr/lib/postgresql/\(v)/bin"
        port = LatencyRun.freePort()
        var template = Array("/tmp/liverelay-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchError("cannot make a directory for PostgreSQL") }
        directory = URL(fileURLWithPath: String(cString: made))
        chmod(directory.path, 0o755)
        if geteuid() == 0 {
            asUser = ["/usr/sbin/runuser", "-u", "postgres", "--"]
            guard let pw = getpwnam("postgres") else { throw BenchError("no postgres user (the postgresql package makes it)") }
            chown(directory.path, pw.pointee.pw_uid, pw.pointee.pw_gid)
        } else {
            asUser = []
        }
        let data = directory.appendingPathComponent("data").path
        let initdb = try ChildProcess.run(asUser.first ?? "\(bin)/initdb",
                                          Array(asUser.dropFirst()) + (asUser.isEmpty ? [] : ["\(bin)/initdb"])
                                            + ["-D", data, "-U", "liverelay", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"], timeout: 120)
        guard initdb.status == 0 else { throw BenchError("initdb failed: \(initdb.output.suffix(500))") }
        let args = ["-D", data, "-p", String(port), "-k", directory.path, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                    "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"]
        child = try ChildProcess(name: "postgres", asUser.first ?? "\(bin)/postgres", Array(asUser.dropFirst()) + (asUser.isEmpty ? [] : ["\(bin)/postgres"]) + args)
        guard child.waitFor("ready to accept connections", timeout: 30) else {
            child.stop()
            throw BenchError("PostgreSQL did not start: \(child.stderr.suffix(500))")
        }
    }

    /// Runs SQL through psql; its rows, one per line, columns split by `|`.
    public func psql(_ sql: String) throws -> String {
        let r = try ChildProcess.run("/usr/bin/psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "liverelay", "-d", "postgres", "-Atqc", sql], timeout: 30)
        guard r.status == 0 else { throw BenchError("psql: \(r.stderr.prefix(300))") }
        return r.stdout
    }

    /// Statements run so far (committed and rolled back transactions: each statement outside a
    /// transaction is one), from the server's own statistics.
    public func transactions() throws -> Int {
        Int(try psql("SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    public func stop() {
        // The postmaster itself (runuser may not pass signals on): a fast shutdown.
        if let pid = (try? String(contentsOfFile: directory.appendingPathComponent("data/postmaster.pid").path, encoding: .utf8))?
            .split(separator: "\n").first.flatMap({ Int32($0) }) {
            Glibc.kill(pid, SIGINT)
            let end = Date().addingTimeInterval(10)
            while Glibc.kill(pid, 0) == 0 && Date() < end { usleep(20_000) }
        }
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
