import Foundation
import Glibc
import Relay

/// `liverelay bench fleet`: the catalog traffic of a fleet. N nodes on one PostgreSQL server
/// (started here) lease M cameras (one gst-rtsp-server, a small live H.264 pipeline per mount);
/// once every camera is at its place, the database's own statistics count transactions per
/// second in 5 s windows while nothing changes, then while a killed node's cameras move.
/// Also: each node's own count of the statements it sent (`liverelay_fleet_catalog_queries_total`).
public struct FleetBenchmark {
    public var nodes = 3
    public var cameras = 64
    public var seconds: Double = 30
    public var out = "./bench-results"

    public init() {}

    struct Node {
        let name: String
        let serve: ChildProcess
        let port: Int
    }

    static func leases(_ port: Int) -> [String: String] {
        guard let f = ChildProcess.decode(FleetReport.self, from: "http://127.0.0.1:\(port)/api/fleet") else { return [:] }
        var out: [String: String] = [:]
        for e in f.leases { out[e.stream] = e.node }
        return out
    }

    static func metric(_ port: Int, _ name: String) -> Double {
        guard let r = try? ChildProcess.run("/usr/bin/curl", ["-s", "-m", "3", "http://127.0.0.1:\(port)/metrics"], timeout: 5) else { return 0 }
        for line in r.stdout.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    public func run() throws {
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("fleet-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let pg = try PostgresServer()
        defer { pg.stop() }
        let camPort = LatencyRun.freePort()
        let launch = "( videotestsrc is-live=true ! video/x-raw,width=160,height=90,framerate=5/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=10 bitrate=50 ! rtph264pay name=pay0 pt=96 config-interval=1 )"
        var camArgs = ["scripts/rtsp_server.py", "--port", String(camPort)]
        for i in 0..<cameras { camArgs += ["--mount", "/cam\(i)=\(launch)"] }
        let cams = try ChildProcess(name: "cameras", "/usr/bin/python3", camArgs)
        defer { cams.stop() }
        guard cams.waitFor("ready", timeout: 20) else { throw BenchError("gst-rtsp-server did not start: \(cams.stderr.suffix(300))") }
        var streams = ""
        for i in 0..<cameras { streams += "  cam\(i): {source: \"rtsp://127.0.0.1:\(camPort)/cam\(i)\", transport: tcp, preview: false}\n" }
        var fleet: [Node] = []
        defer { for n in fleet { n.serve.stop() } }
        for k in 1...nodes {
            let name = "n\(k)"
            let dir = work.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let yaml = "catalog: {postgres: \"\(pg.url)\"}\nnode: {name: \(name)}\nserver: {rtsp: {listen: \"127.0.0.1:\(LatencyRun.freePort())\"}}\nstreams:\n\(streams)"
            let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: dir.appendingPathComponent("config.yaml"))
            fleet.append(Node(name: name, serve: serve, port: port))
        }
        // Placed: every camera leased, and no lease moved for 15 s (the first node took them all;
        // it hands each to its first choice 10 s after taking it).
        var last: [String: String] = [:], stableSince = Date()
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline {
            let l = Self.leases(fleet[0].port)
            if l != last { last = l; stableSince = Date() }
            if l.count == cameras && Date().timeIntervalSince(stableSince) > 15 { break }
            Thread.sleep(forTimeInterval: 0.5)
        }
        guard last.count == cameras else { throw BenchError("only \(last.count) of \(cameras) cameras leased") }
        let share = Dictionary(grouping: last.values, by: { $0 }).mapValues(\.count).sorted { $0.key < $1.key }

        func windows(_ total: Double) throws -> [Double] {
            var out: [Double] = []
            var before = try pg.transactions()
            var t = Date()
            let end = Date().addingTimeInterval(total)
            while Date() < end {
                Thread.sleep(forTimeInterval: 5)
                let now = try pg.transactions(), t2 = Date()
                // Less this probe's own transaction.
                out.append(Double(now - before - 1) / t2.timeIntervalSince(t))
                before = now
                t = t2
            }
            return out
        }
        let sentBefore = fleet.map { Self.metric($0.port, "liverelay_fleet_catalog_queries_total") }
        let t0 = Date()
        let steady = try windows(seconds)
        let sentAfter = fleet.map { Self.metric($0.port, "liverelay_fleet_catalog_queries_total") }
        let perNode = zip(sentBefore, sentAfter).map { ($1 - $0) / Date().timeIntervalSince(t0) }

        // The node with the most cameras killed: its cameras move; the traffic while they do.
        let counts = Dictionary(grouping: last.keys, by: { last[$0]! })
        let victim = fleet.max { (counts[$0.name]?.count ?? 0) < (counts[$1.name]?.count ?? 0) }!
        let survivor = fleet.first { $0.name != victim.name }!
        let held = counts[victim.name] ?? []
        let beforeKill = try pg.transactions()
        let killedAt = Date()
        victim.serve.kill()
        var movedAfter: Double?
        var polls = 0
        while Date().timeIntervalSince(killedAt) < 30 {
            polls += 1
            let l = Self.leases(survivor.port)
            if held.allSatisfy({ l[$0] != nil && l[$0] != victim.name }) { movedAfter = Date().timeIntervalSince(killedAt); break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        // Less the bench's own reads of /api/fleet (one transaction each) and this probe.
        let moving = Double(try pg.transactions() - beforeKill - polls - 1) / Date().timeIntervalSince(killedAt)
        let after = try windows(15)
        func f(_ xs: [Double]) -> String { xs.map { String(format: "%.1f", $0) }.joined(separator: ", ") }
        var text = "bench fleet: \(nodes) nodes, \(cameras) cameras (gst-rtsp-server), PostgreSQL \(try pg.psql("SHOW server_version").trimmingCharacters(in: .whitespacesAndNewlines))\n"
        text += "cameras per node: \(share.map { "\($0.key) \($0.value)" }.joined(separator: ", "))\n"
        text += "| phase | database transactions/s, 5 s windows | per node (its own count) |\n|---|---|---|\n"
        text += "| steady, \(Int(seconds)) s | \(f(steady)) | \(f(perNode)) |\n"
        text += "| \(victim.name) killed (\(held.count) cameras) until they are leased elsewhere | \(String(format: "%.1f", moving)) | |\n"
        text += "| after, 15 s | \(f(after)) | |\n"
        text += "cameras of the killed node leased elsewhere (read back over HTTP) after \(movedAfter.map { String(format: "%.1f s", $0) } ?? "more than 30 s")\n"
        print(text, terminator: "")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try text.write(toFile: (out as NSString).appendingPathComponent("fleet.md"), atomically: true, encoding: .utf8)
    }
}
