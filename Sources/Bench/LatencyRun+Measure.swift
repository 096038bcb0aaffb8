import MediaCore
import StampedSource
import Foundation
import Synchronization
import Relay
import RelayAPI
import Decode

extension LatencyRun {
    func measure(_ group: [Scenario], servePort: Int) throws -> [ScenarioResult] {
        var readers: [(Scenario, ChildProcess, StampReader)] = []
        var browsers: [(Scenario, ChildProcess, URL)] = []
        let longestWarmup = group.map(\.warmup).max() ?? 3
        var watchers: [(Scenario, SegmentWatcher)] = []
        for s in group {
            if let playlist = s.playlist {
                watchers.append((s, try SegmentWatcher(name: s.name, playlist: playlist, store: out.appendingPathComponent("work/segments/\(s.name)"))))
                continue
            }
            if let page = s.page {
                let csv = out.appendingPathComponent("work/\(s.name).browser.csv")
                let what = s.tile.map { ["--stamps-tile", $0, "--size", "1700x1300"] } ?? ["--stamps", "video"]
                let p = try ChildProcess(name: "browser:\(s.name)", "/usr/bin/python3", [scriptPath("browser.py"), page] + what + ["--seconds",
                                                                                  String(longestWarmup + seconds), "--csv", csv.path, "--timeout", "30"])
                browsers.append((s, p, csv))
                continue
            }
            let p = try ChildProcess(name: "reader:\(s.name)", "/usr/bin/ffmpeg", ["-v", "error"] + s.input + ["-an", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(width)x\(height)", "-"], rawStdout: true)
            readers.append((s, p, StampReader(handle: p.rawStdout!.fileHandleForReading, width: width, height: height, judge: lab != nil)))
        }
        defer { for r in readers { r.1.stop() }; for b in browsers { b.1.stop() }; for w in watchers { w.1.stop() } }
        Thread.sleep(forTimeInterval: longestWarmup)
        let relays = Set(group.compactMap(\.relay)).compactMap { processes[$0].map { ($0.name, $0) } }
        let cpu0 = Dictionary(uniqueKeysWithValues: relays.map { ($0.0, $0.1.cpuSeconds) })
        let t0 = Date()
        let machine0 = LatencyGroups.CPUSample.now()
        for r in readers { r.2.startRecording() }
        for w in watchers { w.1.startRecording() }
        Thread.sleep(forTimeInterval: seconds)
        for r in readers { r.2.stopRecording() }
        for w in watchers { w.1.stopRecording() }
        let wall = Date().timeIntervalSince(t0)
        // How much of the machine was left while this group was measured.
        let machineIdle = machine0.flatMap { a in LatencyGroups.CPUSample.now()?.idle(since: a) }
        let window = (Int64(t0.timeIntervalSince1970 * 1000), Int64(Date().timeIntervalSince1970 * 1000))
        var cpu: [String: Double] = [:], rss: [String: Double] = [:]
        for (name, p) in relays {
            cpu[name] = (p.cpuSeconds - (cpu0[name] ?? 0)) / wall * 100
            rss[name] = p.rssMiB
        }
        // Browsers report when they finish (the page keeps reading past the window; only the window counts).
        var browserSamples: [String: [StampReader.Sample]] = [:]
        for (s, p, csv) in browsers {
            let end = Date().addingTimeInterval(40)
            while p.process.isRunning && Date() < end { usleep(100_000) }
            let text = (try? String(contentsOf: csv, encoding: .utf8)) ?? ""
            browserSamples[s.name] = text.split(separator: "\n").dropFirst().compactMap { line -> StampReader.Sample? in
                let c = line.split(separator: ",")
                guard c.count == 4, let n = UInt32(c[0]), let t = Int64(c[1]), let r = Int64(c[2]), r >= window.0, r <= window.1 else { return nil }
                return StampReader.Sample(counter: n, captureMs: t, receivedMs: r)
            }
            if browserSamples[s.name]!.isEmpty { browserSamples[s.name + "#why"] = [] ; notes.append("\(s.name): \(p.stderr.suffix(200))") }
            if let h = Self.hlsjsState(p.stdout) { notes.append("\(s.name): \(h)") }
        }
        for w in watchers { w.1.stop() }
        let listedRows = watchers.map { s, w in segmentResult(s, w, cpuPercent: s.relay.flatMap { cpu[$0] }, rssMiB: s.relay.flatMap { rss[$0] }) }
        let all: [(Scenario, ChildProcess?, [StampReader.Sample], Int, StampReader?)] = readers.map { ($0.0, $0.1, $0.2.all, $0.2.misreadCount, $0.2) }
            + browsers.map { ($0.0, $0.1, browserSamples[$0.0.name] ?? [], 0, nil) }
        return all.map { s, p, samples, misreads, reader in
            try? csv(s.name, samples)
            let count = Self.account(samples.map(\.counter))
            var r = ScenarioResult(name: s.name, path: s.path, latencies: samples.map { Double($0.receivedMs - $0.captureMs) }, frames: samples.count,
                                   dropped: count.dropped, outOfOrder: count.outOfOrder, misreads: misreads,
                                   cpuPercent: s.relay.flatMap { cpu[$0] }, rssMiB: s.relay.flatMap { rss[$0] })
            if lab != nil, let reader { r.damaged = reader.damagedCount; r.repeats = reader.repeatCount }
            if samples.isEmpty {
                r.note = "no pictures: " + String(p?.stderr.split(separator: "\n").last ?? "reader produced nothing")
                // A relay that is gone says why (its status and last words), for the row that missed it.
                if let relay = s.relay, let rp = processes[relay], !rp.process.isRunning {
                    r.note += " (\(relay) exited with status \(rp.process.terminationStatus): \(rp.stderr.suffix(300)))"
                }
            }
            return r
        }.map { Self.judged($0, machineIdle: machineIdle) } + listedRows.map { Self.judged($0, machineIdle: machineIdle) }
    }

    /// The row with the machine's idle share during its group, flagged when there was none to
    /// speak of: its figures then say more about the machine than about the path.
    static func judged(_ row: ScenarioResult, machineIdle: Double?) -> ScenarioResult {
        var r = row
        r.machineIdle = machineIdle
        if let idle = machineIdle, idle < LatencyGroups.starvedBelow {
            r.note = (r.note.isEmpty ? "" : r.note + "; ") + "STARVED: the machine was \(Int((idle * 100).rounded())) % idle while its group was measured"
        }
        return r
    }

    /// Drops and reorders from the source's frame counters in the order a reader got them:
    /// counters missing from the range seen, and counters below one already seen.
    static func account(_ counters: [UInt32]) -> (dropped: Int, outOfOrder: Int) {
        var maxSeen: UInt32?
        var outOfOrder = 0
        for c in counters {
            if let m = maxSeen, c < m { outOfOrder += 1 }
            maxSeen = max(maxSeen ?? c, c)
        }
        let distinct = Set(counters)
        let expected = distinct.isEmpty ? 0 : Int(distinct.max()! - distinct.min()! + 1)
        return (expected - distinct.count, outOfOrder)
    }

    /// The row of a watched playlist: one latency per segment listed in the window (capture of
    /// its last picture → listed); frames, drops, reorders and misreads over every picture of
    /// those segments, decoded after the run.
    func segmentResult(_ s: Scenario, _ w: SegmentWatcher, cpuPercent: Double?, rssMiB: Double?) -> ScenarioResult {
        var samples: [StampReader.Sample] = []
        var counters: [UInt32] = []
        var misreads = 0
        for seg in w.segments {
            let pictures = decodeStamps(seg.file)
            misreads += pictures.misreads
            counters += pictures.stamps.map(\.frameNumber)
            if let last = pictures.stamps.max(by: { $0.frameNumber < $1.frameNumber }) {
                samples.append(StampReader.Sample(counter: last.frameNumber, captureMs: last.captureMillis, receivedMs: seg.listedMs))
            }
        }
        try? csv(s.name, samples)
        let count = Self.account(counters)
        var r = ScenarioResult(name: s.name, path: s.path, latencies: samples.map { Double($0.receivedMs - $0.captureMs) }, frames: counters.count,
                               dropped: count.dropped, outOfOrder: count.outOfOrder, misreads: misreads, cpuPercent: cpuPercent, rssMiB: rssMiB)
        if samples.isEmpty { r.note = "no segment listed in the window" }
        if !w.problems.isEmpty { r.note += (r.note.isEmpty ? "" : "; ") + w.problems.prefix(3).joined(separator: "; ") }
        return r
    }

    /// Every picture of a segment file, decoded by ffmpeg to grey, with its stamp.
    func decodeStamps(_ file: URL) -> (stamps: [Stamp], misreads: Int) {
        guard let p = try? ChildProcess(name: "segment", "/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-an", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(width)x\(height)", "-"],
                                        rawStdout: true) else { return ([], 0) }
        let data = p.rawStdout!.fileHandleForReading.readDataToEndOfFile()
        p.process.waitUntilExit()
        let size = width * height
        var stamps: [Stamp] = [], misreads = 0
        data.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return }
            for k in 0..<(data.count / size) {
                if let st = StampCodec.read(luma: base + k * size, stride: width, width: width, height: height) { stamps.append(st) } else { misreads += 1 }
            }
        }
        return (stamps, misreads)
    }

    /// What hls.js said of its own play-out (browser.py's "hlsjs" object), in one line.
    static func hlsjsState(_ output: String) -> String? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let o = try? BrowserReport.decode(line),
              let h = o.hlsjs, let target = h.targetLatency else { return nil }
        let stalls = h.stalls ?? 0
        let td = h.targetDuration.map { ", target duration \($0) s" } ?? ""
        // Every player is meant to be kept at the edge by LiveRelay's script (`?edge=`): a row
        // without it would measure hls.js alone, and says so.
        let edge = h.keptLive == true ? "" : "; NOT kept at the live edge: \(h.edgeError ?? "its script did not run")"
        return String(format: "hls.js aimed at %.2f s behind the live edge (stalls: %d%@)%@", target, stalls, td, edge)
    }

    /// LiveRelay's own histograms: capture → preview sink, and last frame → HLS part/segment listed.
    func inProcessRows(servePort: Int, previews: [String], hls: [String]) -> [ScenarioResult] {
        func api(_ stream: String) -> StreamView? {
            guard let data = ChildProcess.httpBody("http://127.0.0.1:\(servePort)/api/streams/\(stream)") else { return nil }
            return try? RelayAPI.decode(StreamView.self, from: data)
        }
        func fixed(_ s: LatencySummary) -> [Double: Double] {
            var out: [Double: Double] = [:]
            for (v, p) in [(s.p50Ms, 50.0), (s.p90Ms, 90), (s.p99Ms, 99), (s.maxMs, 100)] { if let v { out[p] = v } }
            return out
        }
        var rows: [ScenarioResult] = []
        for preview in previews {
            guard let j = api(preview), let sink = j.sink(named: "preview") else { continue }
            let cap = sink.captureToDelivered
            if let d = j.stream.decodeCounters {
                notes.append("\(preview) decoder (whole run): \(d.framesDecoded) frames decoded, \(d.corruptFrames) concealed (damaged input), \(d.droppedCorruptFrames) damaged ones not shown, \(d.corruptPackets) packets rejected, \(d.skippedUntilKeyframe) skipped waiting for a keyframe; stamps readable before JPEG: \(cap.count) of \(sink.counters.delivered) pictures.")
            }
            var r = ScenarioResult(name: "liverelay-preview-sink-\(preview)", path: "in-process: capture → LiveRelay's preview sink, before JPEG (whole run)",
                                   latencies: [], frames: sink.counters.delivered, dropped: sink.counters.droppedTotal,
                                   outOfOrder: sink.counters.outOfOrder, misreads: 0, cpuPercent: nil, rssMiB: nil)
            r.fixed = fixed(cap)
            rows.append(r)
        }
        for stream in hls {
            guard let j = api(stream), let h = j.hls else { continue }
            let a = h.availability
            let variant = h.variant
            var r = ScenarioResult(name: "liverelay-hls-\(variant)-availability", path: "in-process: last frame arrived → its \(variant == "lowLatency" ? "part" : "segment") listed (whole run)",
                                   latencies: [], frames: a.count, dropped: 0, outOfOrder: 0, misreads: 0, cpuPercent: nil, rssMiB: nil)
            r.fixed = fixed(a)
            rows.append(r)
        }
        return rows
    }

    func csv(_ name: String, _ samples: [StampReader.Sample]) throws {
        var text = "frame,capture_ms,received_ms,latency_ms\n"
        for s in samples { text += "\(s.counter),\(s.captureMs),\(s.receivedMs),\(s.receivedMs - s.captureMs)\n" }
        try text.write(to: out.appendingPathComponent("\(name).csv"), atomically: true, encoding: .utf8)
    }

    func write(_ results: [ScenarioResult]) throws {
        func f(_ v: Double?) -> String { v.map { $0 < 10 ? String(format: "%.1f", $0) : String(format: "%.0f", $0) } ?? "–" }
        let floors = Dictionary(results.filter { $0.name.hasPrefix("floor-") }.compactMap { r in r.percentile(50).map { (String(r.name.dropFirst(6)), $0) } }) { a, _ in a }
        // Impaired runs judge every picture against the pattern its stamp names: damaged
        // (readable but smeared) and repeats (a held picture shown again) get columns.
        let judged = lab != nil
        var md = "| scenario | path | p50 ms | p90 ms | p99 ms | max ms | p50 − floor | frames | dropped | out of order | misreads |\(judged ? " damaged | repeats |" : "") relay CPU % | relay RSS MiB | machine idle % |\n"
        md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\(judged ? "---:|---:|" : "")---:|---:|---:|\n"
        for r in results {
            let transport = ["rtsp-udp", "rtsp-tcp", "rtmp"].first { r.name.hasSuffix($0) }
            let delta = r.name.hasPrefix("floor-") || r.path.hasPrefix("in-process") ? nil : transport.flatMap { t in floors[t].flatMap { fl in r.percentile(50).map { $0 - fl } } }
            md += "| \(r.name) | \(r.path) | \(f(r.percentile(50))) | \(f(r.percentile(90))) | \(f(r.percentile(99))) | \(f(r.latencies.max() ?? r.fixed[100])) | \(delta.map { String(format: "%+.0f", $0) } ?? "") | \(r.frames) | \(r.dropped) | \(r.outOfOrder) | \(r.misreads) |\(judged ? " \(r.damaged.map(String.init) ?? "–") | \(r.repeats.map(String.init) ?? "–") |" : "") \(f(r.cpuPercent)) | \(f(r.rssMiB)) | \(f(r.machineIdle.map { $0 * 100 })) |\n"
        }
        for r in results where !r.note.isEmpty { md += "\n- \(r.name): \(r.note)" }
        for n in notes { md += "\n- \(n)" }
        var cpuModel = "unknown CPU"
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8), let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
            cpuModel = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? cpuModel
        }
        var header = "Latency, capture → picture at the reader, \(width)x\(height) at \(fps) fps, GOP \(gop)\(lateKeyframe > 0 ? " (every \(lateKeyframe)th keyframe a GOP late)" : ""), \(bitrate) kbit/s; \(Int(seconds)) s per scenario\(parallel ? " (side by side, in groups that fit the machine)" : ""). \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpuModel), \(ISO8601DateFormatter().string(from: Date())).\n\n"
        if let lab { header += "Impaired link between the sources and LiveRelay/readers: \(lab.impairment) (\(lab.method)).\n\n" }
        try (header + md + "\n").write(to: out.appendingPathComponent("results.md"), atomically: true, encoding: .utf8)
        try LatencyPlots.cdf(results).write(to: out.appendingPathComponent("latency-cdf.svg"), atomically: true, encoding: .utf8)
        try LatencyPlots.overTime(results, out: out).write(to: out.appendingPathComponent("latency-time.svg"), atomically: true, encoding: .utf8)
        print(header + md)
        print("\nwritten: \(out.path)/results.md, one CSV per scenario, latency-cdf.svg, latency-time.svg")
    }
}

