import Foundation

/// `liverelay bench edge`: LL-HLS through the shipped nginx edge (dist/nginx/liverelay-edge.conf)
/// in one run. hls.js in Chromium through the edge and straight from the origin (capture →
/// screen, read from the stamped picture), then N simulated LL-HLS players
/// (scripts/llhls_viewers.py) through the edge: requests at the edge and at the origin, origin
/// requests per part and per blocking playlist answer, and the origin's CPU, which should not
/// grow with N. Run from the checkout (it reads dist/ and scripts/).
public struct EdgeBenchmark {
    /// Player counts (comma-separated); 0 measures the origin with no player.
    public var viewers = "0,100,1000"
    public var seconds: Double = 20
    public var out = "./bench-results"

    public init() {}

    struct Row {
        let viewers: Int
        let edgeRequests: Int
        let originRequests: Int
        let parts: Int
        let originParts: Int
        let answers: Int
        let originAnswers: Int
        let originCPU: Double
        let partsPerSecondP10: Double
        let errors: Int
    }

    public func run() throws {
        let shipped = URL(fileURLWithPath: "dist/nginx/liverelay-edge.conf")
        let players = URL(fileURLWithPath: "scripts/llhls_viewers.py"), browser = URL(fileURLWithPath: "scripts/browser.py")
        guard FileManager.default.fileExists(atPath: shipped.path), FileManager.default.fileExists(atPath: players.path) else {
            throw BenchError("run from the checkout: dist/nginx/liverelay-edge.conf and scripts/llhls_viewers.py are read")
        }
        let counts = viewers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("edge-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let yaml = "streams:\n  cam: {source: \"testsrc://?size=640x360&fps=30&gop=30\", preview: false, hls: {variant: lowLatency, segment_duration: 1s, part_duration: 0.1s, part_hold_back: 3}}\n"
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("origin.yaml"))
        defer { serve.stop() }
        let edge = try NginxEdge(origin: port, shipped: shipped)
        sleep(3)

        // hls.js, edge and direct in turn, twice.
        var latency: [String: [Double]] = [:]
        for _ in 0..<2 {
            for (name, url) in [("edge", edge.url("streams/cam/watch?via=hls")), ("direct", "http://127.0.0.1:\(port)/streams/cam/watch?via=hls")] {
                let r = try ChildProcess.run("/usr/bin/python3", [browser.path, url, "--stamps", "video", "--seconds", "10", "--timeout", "30"], timeout: 120)
                if let j = try? JSONDecoder().decode(EdgeBrowserLine.self, from: Data(r.stdout.utf8)), let p50 = j.p50 {
                    latency[name, default: []].append(p50)
                }
            }
        }

        var rows: [Row] = []
        for n in counts {
            let before = edge.requests.count
            let cpu0 = serve.cpuSeconds
            var load = EdgeViewersLine()
            if n == 0 {
                Thread.sleep(forTimeInterval: seconds)
            } else {
                let r = try ChildProcess.run("/usr/bin/python3", [players.path, edge.url("streams/cam/hls/index.m3u8"), "--viewers", String(n),
                                                                  "--seconds", String(seconds), "--ramp", "0"], timeout: seconds + 180)
                load = (try? JSONDecoder().decode(EdgeViewersLine.self, from: Data(r.stdout.utf8))) ?? EdgeViewersLine()
            }
            let cpu = (serve.cpuSeconds - cpu0) / seconds * 100
            let requests = edge.requests.dropFirst(before)
            let origin = requests.filter { $0.cache != "HIT" }
            let parts = Set(requests.filter { $0.uri.contains("/part") }.map(\.uri))
            let answers = Set(requests.filter { $0.uri.contains("_HLS_msn") }.map(\.uri))
            rows.append(Row(viewers: n, edgeRequests: requests.count, originRequests: origin.count, parts: parts.count,
                            originParts: origin.filter { $0.uri.contains("/part") }.count, answers: answers.count,
                            originAnswers: origin.filter { $0.uri.contains("_HLS_msn") }.count, originCPU: cpu,
                            partsPerSecondP10: load.partsPerSecondP10 ?? 0, errors: load.errors ?? 0))
        }

        func median(_ v: [Double]) -> String { v.isEmpty ? "-" : String(format: "%.0f", v.sorted()[v.count / 2]) }
        var md = "### LL-HLS through the nginx edge (`liverelay bench edge --viewers \(viewers) --seconds \(Int(seconds))`)\n\n"
        md += "hls.js in headless Chromium, capture → screen p50 (two runs each, alternating): through the edge \(median(latency["edge"] ?? [])) ms "
        md += "(\((latency["edge"] ?? []).map { String(format: "%.0f", $0) }.joined(separator: ", "))), direct \(median(latency["direct"] ?? [])) ms "
        md += "(\((latency["direct"] ?? []).map { String(format: "%.0f", $0) }.joined(separator: ", "))).\n\n"
        md += "| players | requests at the edge | at the origin | parts | origin requests per part | blocking answers | origin requests per answer | origin CPU % | parts/s per player, p10 | player errors |\n"
        md += "|---|---|---|---|---|---|---|---|---|---|\n"
        for r in rows {
            md += String(format: "| %d | %d | %d | %d | %.2f | %d | %.2f | %.1f | %.1f | %d |\n", r.viewers, r.edgeRequests, r.originRequests, r.parts,
                         Double(r.originParts) / Double(max(1, r.parts)), r.answers, Double(r.originAnswers) / Double(max(1, r.answers)),
                         r.originCPU, r.partsPerSecondP10, r.errors)
        }
        md += "\nOne 640x360 30 fps LL-HLS stream (1 s segments, 0.1 s parts, PART-HOLD-BACK 0.3 s); the players, nginx and the origin share this machine's cores.\n"
        try md.write(to: URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("edge.md"), atomically: true, encoding: .utf8)
        print(md)
    }
}

/// browser.py `--stamps`' JSON line: the median stamp latency (ms; null without stamps).
struct EdgeBrowserLine: Decodable {
    var p50: Double?
}

/// llhls_viewers.py's JSON line: the fields the bench reads.
struct EdgeViewersLine: Decodable {
    var errors: Int?
    var partsPerSecondP10: Double?

    enum CodingKeys: String, CodingKey {
        case errors
        case partsPerSecondP10 = "parts_per_second_p10"
    }
}
