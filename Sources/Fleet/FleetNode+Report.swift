public import Relay
import Foundation
import PostgresNIO

extension FleetNode {
    // MARK: the report

    public func report() async throws -> FleetReport {
        let rows = try await database.query("""
            SELECT 'n', name, url, rtsp_url, EXTRACT(EPOCH FROM heartbeat)::float8, 0::bigint,
                   (heartbeat > now() - make_interval(secs => \(ttl)))::text FROM nodes
            UNION ALL SELECT 'l', stream, node, NULL::text, EXTRACT(EPOCH FROM until)::float8, moves, (until > now())::text FROM leases
            """)
        var nodes: [FleetReport.NodeEntry] = [], leases: [FleetReport.LeaseEntry] = []
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for row in rows {
            guard let (kind, a, b, c, t, moves, flag) = try? row.decode((String, String, String, String?, Double, Int, String).self) else { continue }
            let when = f.string(from: Date(timeIntervalSince1970: t))
            if kind == "n" {
                nodes.append(.init(name: a, url: b, rtspURL: c, lastHeartbeat: when, live: flag == "true"))
            } else if flag == "true" {
                leases.append(.init(stream: a, node: b, until: when, moves: moves))
            }
        }
        return FleetReport(node: settings.node, nodes: nodes.sorted { $0.name < $1.name }, leases: leases.sorted { $0.stream < $1.stream })
    }

    /// A database error in one line (postgres-nio's description hides the server's message).
    public static func describe(_ error: any Error) -> String {
        if let e = error as? PSQLError {
            if let m = e.serverInfo?[.message] { return "PostgreSQL: \(m)" }
            return "PostgreSQL: \(e.code)\(e.underlying.map { " (\($0))" } ?? "")"
        }
        return "\(error)"
    }
}
