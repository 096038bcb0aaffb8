import Testing
import TestSupport
import Foundation

/// dist/grafana/liverelay.json charts only metrics the server exports (RelayMetrics names each
/// one literally), and is a dashboard Grafana can import (panels with Prometheus queries).
@Suite(.ownThreads, .tags(.fast)) struct GrafanaDashboardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What the test reads of the dashboard: its panels' Prometheus queries.
    struct Dashboard: Decodable {
        struct Panel: Decodable {
            struct Target: Decodable {
                var expr: String?
            }
            var targets: [Target]?
        }
        var panels: [Panel]
    }

    @Test func everyChartedMetricIsExported() throws {
        let data = try Data(contentsOf: Self.root.appendingPathComponent("dist/grafana/liverelay.json"))
        let panels = try JSONDecoder().decode(Dashboard.self, from: data).panels
        #expect(panels.count >= 10)
        let exported = try String(contentsOf: Self.root.appendingPathComponent("Sources/RelayServer/RelayMetrics.swift"), encoding: .utf8)
        var charted = Set<String>()
        for panel in panels {
            for target in panel.targets ?? [] {
                let expr = target.expr ?? ""
                var rest = Substring(expr)
                while let r = rest.range(of: "liverelay_") {
                    let name = rest[r.lowerBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    charted.insert(String(name))
                    rest = rest[name.endIndex...]
                }
            }
        }
        #expect(charted.count >= 15, "\(charted.sorted())")
        for name in charted {
            #expect(exported.contains("\"\(name)\""), "the dashboard charts \(name), which /metrics does not export")
        }
        for link in ["liverelay_rtp_packets_lost_total", "liverelay_rtp_jitter_seconds", "liverelay_srt_round_trip_seconds",
                     "liverelay_stream_bitrate_in_bits_per_second", "liverelay_stream_viewers"] {
            #expect(charted.contains(link), "\(link) is not charted")
        }
    }
}
