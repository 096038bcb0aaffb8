import Foundation
import Glibc
import Relay

/// What the incident review page's `review` calls return to browser.py's `eval` steps:
/// `review.seekAndWait(T)` (each camera's first picture after the seek, ms), `review.stamps()`
/// (the capture time each tile shows, read off its pixels, at one moment of the clock),
/// `review.sample(ms)` (those, every animation frame), or a number.
public enum ReviewEval: Decodable, Sendable {
    public struct Seek: Decodable, Sendable {
        /// Per camera, ms from the seek to its first picture there.
        public var ms: [String: Double]
        /// The slowest camera's; nil when one had none in time.
        public var all: Double?
    }

    public struct Stamps: Decodable, Sendable {
        /// The review clock (Unix ms).
        public var clock: Double
        /// Per camera, the capture time (Unix ms) its tile shows; nil: no picture, or no stamp.
        public var tiles: [String: Double?]

        /// The newest picture less the oldest, over the tiles showing one.
        public var spread: Double? {
            let shown = tiles.values.compactMap { $0 }
            guard shown.count >= 2, let hi = shown.max(), let lo = shown.min() else { return nil }
            return hi - lo
        }
    }

    case seek(Seek)
    case stamps(Stamps)
    case samples([Stamps])
    case number(Double)
    case other

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode([Stamps].self) { self = .samples(s) }
        else if let s = try? c.decode(Stamps.self) { self = .stamps(s) }
        else if let s = try? c.decode(Seek.self) { self = .seek(s) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else { self = .other }
    }

    public var seek: Seek? { if case .seek(let s) = self { s } else { nil } }
    public var stamps: Stamps? { if case .stamps(let s) = self { s } else { nil } }
    public var samples: [Stamps]? { if case .samples(let s) = self { s } else { nil } }
    public var number: Double? { if case .number(let n) = self { n } else { nil } }
}

/// `liverelay bench incident`: an incident reviewed in step and exported.
/// - Review: four stamped cameras (30 fps) recorded by `serve`, an incident over them, its page
///   (`/incidents/{id}`) in headless Chromium. Seeks while paused: the first picture of every
///   camera after each; then the capture times the four tiles show at the same moment, read
///   off the page's pixels every animation frame, paused, at 1× and at 4× (sampled from
///   half a second after play, itself after each seek).
/// - Export: an archive of 4 cameras × 10 minutes (and, with `scale`, 16 × 1 hour) of
///   one-minute files as the recorder writes them (hard links of one), the incident's evidence
///   bundle downloaded by curl against real time, serve's resident memory sampled meanwhile;
///   with `scale`, the 16-camera review's seeks too.
/// Run from the checkout.
public struct IncidentBenchmark {
    /// Seconds the four cameras record before the review.
    public var seconds = 40.0
    public var seeks = 12
    public var scale = true
    public var out = "./bench-results"

    public init() {}

    static let python = "/usr/bin/python3"

    public func run() throws {
        guard seconds >= 20, seeks >= 1 else { throw BenchError("--seconds: at least 20 (four cameras recorded, room to play 4× after a seek); --seeks: at least 1") }
        guard FileManager.default.fileExists(atPath: "scripts/browser.py") else { throw BenchError("run from the checkout: scripts/browser.py is needed") }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("incident-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var report = try review(me: me, work: work.appendingPathComponent("review"))
        report += "\n" + (try export(me: me, work: work.appendingPathComponent("export")))
        print(report)
        try report.write(to: URL(fileURLWithPath: out).appendingPathComponent("incident.md"), atomically: true, encoding: .utf8)
    }

    static func p(_ v: [Double], _ q: Double) -> Double? {
        guard !v.isEmpty else { return nil }
        let s = v.sorted()
        return s[min(s.count - 1, Int(Double(s.count) * q))]
    }

    static func f(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "–" }

    static var iso: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }

    /// Makes an incident of `streams` over `start`..<`end`; its id.
    static func incident(_ base: String, streams: [String], start: Date, end: Date) throws -> Int {
        let names = streams.map { "\"\($0)\"" }.joined(separator: ", ")
        let body = "{\"title\": \"bench\", \"streams\": [\(names)], \"start\": \"\(iso.string(from: start))\", \"end\": \"\(iso.string(from: end))\"}"
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body, "\(base)/api/incidents"], timeout: 30)
        struct Made: Decodable { var id: Int }
        guard let made = try? JSONDecoder().decode(Made.self, from: Data(r.stdout.utf8)) else { throw BenchError("incident not made: \(r.output.suffix(300))") }
        return made.id
    }

    /// browser.py on the incident's page, running `steps`; what its evals returned.
    static func onPage(_ base: String, id: Int, steps: [String], timeout: Double) throws -> [ReviewEval] {
        let r = try ChildProcess.run(python, ["scripts/browser.py", "\(base)/incidents/\(id)", "--size", "1280x800", "--keys-after", "3",
                                              "--timeout", "60", "--seconds", "0.1", "--steps", steps.joined(separator: ";")], timeout: timeout)
        let evals = BrowserEvals<ReviewEval>.of(r.stdout)
        guard !evals.isEmpty else { throw BenchError("the review page: \(r.output.suffix(400))") }
        return evals
    }

    func review(me: String, work: URL) throws -> String {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let cams = (1...4).map { "cam\($0)" }
        var yaml = "streams:\n"
        for c in cams {
            yaml += "  \(c): {source: \"testsrc://?size=640x360&fps=30&gop=30\", preview: false, record: {path: \(work.path)/rec, segment_duration: 2s, keep: 1h}}\n"
        }
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve.yaml"))
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        let began = Date()
        Thread.sleep(forTimeInterval: seconds)
        let start = began.addingTimeInterval(3), end = Date().addingTimeInterval(-1)
        let id = try Self.incident(base, streams: cams, start: start, end: end)
        let from = start.timeIntervalSince1970 * 1000, length = end.timeIntervalSince(start) * 1000
        var rng = SystemRandomNumberGenerator()
        func anywhere(leaving tail: Double) -> Int { Int(from + Double.random(in: 0...(length - tail), using: &rng)) }
        var steps = ["eval:review.loaded"]
        for _ in 0..<seeks { steps += ["eval:review.seekAndWait(\(anywhere(leaving: 500)))", "eval:review.stamps()"] }
        for rate in [1, 4] {
            for _ in 0..<3 {
                steps += ["eval:review.setRate(\(rate))", "eval:review.seekAndWait(\(anywhere(leaving: 3500.0 * Double(rate) + 1000)))", "eval:review.play()",
                          "sleep:0.5", "eval:review.sample(2000)", "eval:review.pause()"]
            }
        }
        // The baseline in the same run: the same four players seeked to one moment and then
        // left to play on their own (no shared clock), as separate players are.
        for rate in [1, 4] {
            for _ in 0..<3 {
                steps += ["eval:review.seekAndWait(\(anywhere(leaving: 3500.0 * Double(rate) + 1000)))", "eval:review.freeRun = true",
                          "eval:review.cams.forEach(c => c.video.playbackRate = \(rate))", "eval:review.cams.forEach(c => c.video.play())",
                          "sleep:0.5", "eval:review.sample(2000)", "eval:review.cams.forEach(c => c.video.pause())", "eval:review.freeRun = false"]
            }
        }
        let evals = try Self.onPage(base, id: id, steps: steps, timeout: 300)
        let seeks = evals.compactMap(\.seek).prefix(self.seeks).compactMap(\.all)
        let paused = evals.compactMap { $0.stamps?.spread }
        let samples = evals.compactMap(\.samples)
        guard samples.count == 12 else { throw BenchError("the review page sampled \(samples.count) of 12 runs") }
        func spreads(_ runs: ArraySlice<[ReviewEval.Stamps]>) -> [Double] { runs.flatMap { $0.compactMap(\.spread) } }
        let at1 = spreads(samples[0..<3]), at4 = spreads(samples[3..<6]), free1 = spreads(samples[6..<9]), free4 = spreads(samples[9..<12])
        func within(_ v: [Double]) -> String { v.isEmpty ? "–" : String(format: "%.0f %%", Double(v.filter { $0 <= 33.4 }.count) * 100 / Double(v.count)) }
        return """
        Incident review in step: 4 stamped cameras (640x360, 30 fps, recorded in 2 s segments), \(Int(seconds)) s recorded, the page in headless Chromium; \
        the capture times the four tiles show at one moment, read off the page's pixels:
        | | moments | spread p50 ms | p95 | max | within one frame (33 ms) |
        |---|---:|---:|---:|---:|---:|
        | paused, after each seek | \(paused.count) | \(Self.f(Self.p(paused, 0.5))) | \(Self.f(Self.p(paused, 0.95))) | \(Self.f(Self.p(paused, 1))) | \(within(paused)) |
        | playing 1×, from 0.5 s after play | \(at1.count) | \(Self.f(Self.p(at1, 0.5))) | \(Self.f(Self.p(at1, 0.95))) | \(Self.f(Self.p(at1, 1))) | \(within(at1)) |
        | playing 4×, from 0.5 s after play | \(at4.count) | \(Self.f(Self.p(at4, 0.5))) | \(Self.f(Self.p(at4, 0.95))) | \(Self.f(Self.p(at4, 1))) | \(within(at4)) |
        | baseline: the four seeked together, then each on its own, 1× | \(free1.count) | \(Self.f(Self.p(free1, 0.5))) | \(Self.f(Self.p(free1, 0.95))) | \(Self.f(Self.p(free1, 1))) | \(within(free1)) |
        | baseline, 4× | \(free4.count) | \(Self.f(Self.p(free4, 0.5))) | \(Self.f(Self.p(free4, 0.95))) | \(Self.f(Self.p(free4, 1))) | \(within(free4)) |

        First picture on all four tiles after a seek anywhere (paused), ms: p50 \(Self.f(Self.p(seeks, 0.5))), p95 \(Self.f(Self.p(seeks, 0.95))), max \(Self.f(Self.p(seeks, 1))) over \(seeks.count) of \(self.seeks) seeks.

        """
    }

    /// The export rows (and the 16-camera review's seeks).
    func export(me: String, work: URL) throws -> String {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let minute = try RecordedMinute(in: work)
        let state = work.appendingPathComponent("state"), archive = work.appendingPathComponent("archive")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: archive, withIntermediateDirectories: true)
        let yaml = "streams:\n  idle: {source: \"testsrc://?size=160x96&fps=5&gop=5\", preview: false}\n"
        let file = state.appendingPathComponent("serve.yaml")
        // The catalog's tables as serve makes them.
        try ChildProcess.serve(me: me, yaml: yaml, file: file).serve.stop()
        let t0 = (Date().timeIntervalSince1970 - 2 * 3600).rounded(.down)
        var sql = "BEGIN;\n"
        func archiveOf(_ streams: [String], minutes: Int) throws {
            for s in streams {
                for i in 0..<minutes {
                    try FileManager.default.linkItem(atPath: minute.path, toPath: archive.appendingPathComponent("\(s)-\(i).mp4").path)
                }
                sql += """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(minutes - 1))
                    INSERT INTO segments (stream, path, start, duration, bytes, codecs, sha256, chain, fragment_index, span)
                    SELECT '\(s)', '\(archive.path)/\(s)-' || i || '.mp4', \(t0) + i * 60, 60, \(minute.bytes), 'h264', '\(minute.sha256)', 'bench', X'\(minute.index)', 1 FROM n;

                    """
            }
        }
        let four = (1...4).map { "ten\($0)" }, sixteen = (1...16).map { "hour\($0)" }
        try archiveOf(four, minutes: 10)
        if scale { try archiveOf(sixteen, minutes: 60) }
        let loaded = try ChildProcess.run("/usr/bin/sqlite3", [state.appendingPathComponent("catalog.sqlite").path, sql + "COMMIT;\n"], timeout: 120)
        guard loaded.status == 0 else { throw BenchError("sqlite3: \(loaded.stderr)") }
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: file)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        let pid = serve.process.processIdentifier
        var rows: [String] = []
        func bundle(_ streams: [String], minutes: Int) throws {
            let start = Date(timeIntervalSince1970: t0), end = start.addingTimeInterval(Double(minutes) * 60)
            let id = try Self.incident(base, streams: streams, start: start, end: end)
            let before = Self.residentMB(pid)
            let peak = PeakSampler(pid: pid)
            let got: (first: Double, total: Double, bytes: Int, code: Int)
            do { got = try RecordingsBenchmark.curl("\(base)/api/incidents/\(id)/export") } catch { _ = peak.stop(); throw error }
            let high = peak.stop()
            guard got.code == 200 else { throw BenchError("export of incident \(id): HTTP \(got.code)") }
            let media = Double(streams.count * minutes * 60)
            rows.append("| \(streams.count) cameras × \(minutes) min | \(String(format: "%.0f", Double(got.bytes) / 1e6)) MB | \(String(format: "%.1f", got.total)) s | "
                        + "\(String(format: "%.0f", media / got.total))× | \(String(format: "%.0f", Double(got.bytes) / 1e6 / got.total)) MB/s | "
                        + "\(String(format: "%.0f", before)) → \(String(format: "%.0f", high)) MB |")
        }
        try bundle(four, minutes: 10)
        var scaleNote = ""
        if scale {
            try bundle(sixteen, minutes: 60)
            // The 16-camera hour reviewed: seeks anywhere, the page's JavaScript heap after.
            let start = Date(timeIntervalSince1970: t0)
            let id = try Self.incident(base, streams: sixteen, start: start, end: start.addingTimeInterval(3600))
            var rng = SystemRandomNumberGenerator()
            var steps = ["eval:review.loaded"]
            steps += (0..<6).map { _ in "eval:review.seekAndWait(\(Int(t0 * 1000 + Double.random(in: 0...3_590_000, using: &rng))), 10000)" }
            steps += ["eval:review.play()", "sleep:5", "eval:performance.memory.usedJSHeapSize / 1e6"]
            let evals = try Self.onPage(base, id: id, steps: steps, timeout: 300)
            let seeks = evals.compactMap { $0.seek?.all }
            scaleNote = "16 cameras × 1 h reviewed: first picture on all 16 tiles after a seek p50 \(Self.f(Self.p(seeks, 0.5))) ms, max \(Self.f(Self.p(seeks, 1))) ms "
                + "(\(seeks.count) of 6 seeks complete); the page's JavaScript heap after 5 s of playing: \(Self.f(evals.last?.number)) MB.\n"
        }
        return """
        Evidence bundle (`GET /api/incidents/{id}/export`, curl to /dev/null) of an archive of one-minute files (640x360, 1 Mbit/s), serve's resident memory before → its peak during the download:
        | incident | bundle | time | × real time | rate | serve's memory |
        |---|---:|---:|---:|---:|---:|
        \(rows.joined(separator: "\n"))

        \(scaleNote)
        """
    }

    /// A process's resident memory (MB).
    static func residentMB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }

    /// The highest resident memory of a process, sampled every 50 ms until stopped.
    final class PeakSampler: @unchecked Sendable {
        private let lock = NSLock()
        private var peak = 0.0
        private var running = true
        private let done = DispatchSemaphore(value: 0)

        init(pid: Int32) {
            Thread.detachNewThread { [self] in
                while lock.withLock({ running }) {
                    let mb = IncidentBenchmark.residentMB(pid)
                    lock.withLock { peak = max(peak, mb) }
                    usleep(50_000)
                }
                done.signal()
            }
        }

        func stop() -> Double {
            lock.withLock { running = false }
            done.wait()
            return lock.withLock { peak }
        }
    }
}
