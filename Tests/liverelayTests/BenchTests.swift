import Testing
import Foundation
import TestSupport

/// `liverelay bench latency` as a user runs it, on a few scenarios: the real camera (gst-rtsp-server),
/// nginx-rtmp, ffmpeg peers and `serve`, every picture's stamp read back.
@Suite(.ownThreads, .serialized, .tags(.exclusive)) struct BenchTests {
    /// The table's rows by scenario: the cells after the path.
    func rows(_ markdown: String) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for line in markdown.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 12, cells[0] != "scenario" else { continue }
            out[cells[0]] = Array(cells.dropFirst(2))
        }
        return out
    }

    @Test func aShortRunReadsEveryStampAndComparesSegmentListingWithThePeers() throws {
        let dir = Paths.tempDirectory("bench")
        let scenarios = ["floor-rtmp", "liverelay-preview-rtmp", "liverelay-hls-mpegts-1s-listed", "ffmpeg-hls-1s-listed", "nginx-rtmp-hls-1s-listed"]
        let r = try ChildProcess.run(Paths.liverelay, ["bench", "latency", "--quick", "--seconds", "6", "--scenarios", scenarios.joined(separator: ","),
                                                       "--out", dir.path], timeout: 180)
        #expect(r.status == 0, "\(r.stderr.suffix(600))")
        let md = try String(contentsOf: dir.appendingPathComponent("results.md"), encoding: .utf8)
        let table = rows(md)
        // Side by side in groups that fit the machine, said in the notes: the floor in a group
        // of its own, first.
        #expect(md.contains("Headroom before measuring: ") && md.contains("run one after another: 1) floor-rtmp; 2) "), "\(md)")
        // columns after the path: p50 p90 p99 max, Δfloor, frames, dropped, out of order, misreads, CPU, RSS, machine idle %
        for name in scenarios {
            let row = try #require(table[name], "no row for \(name) in:\n\(md)")
            let p50 = try #require(Double(row[0]), "\(name): p50 \(row[0]); the notes: \(md.split(separator: "\n").filter { $0.hasPrefix("- ") }.joined(separator: " "))")
            let frames = Int(row[5]) ?? 0, dropped = Int(row[6]) ?? -1, misreads = Int(row[8]) ?? -1
            #expect(misreads == 0, "\(name) misread \(row[8]) pictures")
            // The machine's idle share while the row's group was measured.
            #expect(Double(row[11]).map { (0...100).contains($0) } == true, "\(name): machine idle \(row[11])")
            // The preview keeps the newest picture (latest(1)): on a loaded machine it may skip
            // one, counted; the floor reader and the segments lose none.
            let allowed = name.contains("preview") ? frames / 50 : 0
            #expect(dropped >= 0 && dropped <= allowed, "\(name) dropped \(row[6]) frames on a clean loopback")
            // 6 s at 30 fps: readers see every picture; watched playlists list every picture of
            // their segments (whole segments of 30 pictures).
            #expect(frames >= 150, "\(name): \(frames) pictures")
            if name.hasSuffix("-listed") {
                // The last picture of a segment is listed when the next keyframe arrives: one
                // frame interval after its capture and well within a second, never before.
                #expect(p50 >= 25 && p50 < 500, "\(name): p50 \(p50) ms")
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("\(name).csv").path))
            } else {
                #expect(p50 > 0 && p50 < 500, "\(name): p50 \(p50) ms")
            }
        }
        for svg in ["latency-cdf.svg", "latency-time.svg"] {
            let text = try String(contentsOf: dir.appendingPathComponent(svg), encoding: .utf8)
            #expect(text.hasPrefix("<svg") && text.contains("polyline"), "\(svg)")
        }
        try? FileManager.default.removeItem(at: dir)
    }
    /// `liverelay bench throughput` on one stream: LiveRelay and ffmpeg remux the same file, and
    /// then the same stream pulled from nginx-rtmp, over the same window; every row keeps up and
    /// loses nothing, and the ratio column is LiveRelay's CPU over ffmpeg's.
    @Test func aShortThroughputRunComparesFileAndRTMPRemuxWithFFmpeg() throws {
        let dir = Paths.tempDirectory("bench-tp")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try ChildProcess.run(Paths.liverelay, ["bench", "throughput", "--streams", "2", "--seconds", "3", "--sources", "file,rtmp",
                                                       "--out", dir.path], timeout: 240)
        #expect(r.status == 0, "\(r.stderr.suffix(600))")
        let md = try String(contentsOf: dir.appendingPathComponent("throughput.md"), encoding: .utf8)
        // | streams | path | CPU % | CPU %/stream | RSS | RSS/stream | ratio | drops | speed |
        let cells = md.split(separator: "\n").filter { $0.hasPrefix("| 2 |") }
            .map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
        for from in ["from file", "from RTMP"] {
            let ours = try #require(cells.first { $0[1].contains("LiveRelay") && $0[1].contains(from) }, "no LiveRelay row \(from) in:\n\(md)")
            let peerIndex = try #require(cells.firstIndex { $0 == ours }) + 1
            let peer = cells[peerIndex]
            #expect(peer[1].hasPrefix("ffmpeg"), "the peer row follows: \(peer[1])")
            let cpu = try #require(Double(ours[2])), peerCPU = try #require(Double(peer[2])), ratio = try #require(Double(ours[6]))
            #expect(cpu > 0 && peerCPU > 0, "\(from): CPU \(cpu) vs \(peerCPU)")
            #expect(abs(ratio - cpu / peerCPU) < 0.03 + 0.05 * ratio, "\(from): ratio \(ratio) is not \(cpu) / \(peerCPU)")
            #expect(ours[7] == "0", "\(from): drops \(ours[7])")
            let speed = try #require(Double(ours[8]))
            #expect(speed > 0.9 && speed < 1.1, "\(from): speed \(speed)")
        }
    }

    /// `liverelay bench hevc`, one short round of RTSP out: both cameras' stamps read back
    /// directly and through LiveRelay, the H.264 fallback encodes nothing while nothing needs
    /// it, and its CPU is set against one ffmpeg doing the same transcode.
    @Test func aShortHEVCRunReadsBothCamerasAndCostsTheFallback() throws {
        let dir = Paths.tempDirectory("bench-hevc")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try ChildProcess.run(Paths.liverelay, ["bench", "hevc", "--rounds", "1", "--seconds", "2", "--only", "rtsp", "--out", dir.path], timeout: 240)
        #expect(r.status == 0, "\(r.stderr.suffix(600))")
        let md = try String(contentsOf: dir.appendingPathComponent("hevc.md"), encoding: .utf8)
        func row(_ prefix: String) -> [String]? {
            md.split(separator: "\n").first { $0.hasPrefix("| " + prefix) }?
                .split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        // | path | H.264 p50s (direct) | H.265 p50s (direct) | H.264 − direct | H.265 − direct | H.265 − H.264 |
        let cells = try #require(row("RTSP out"), "no RTSP out row in:\n\(md)")
        for (i, codec) in [(1, "H.264"), (2, "H.265")] {
            // "113 (110)": the path's p50 and its direct read's, over the same window.
            let both = cells[i].split(whereSeparator: { " ()".contains($0) }).compactMap { Double($0) }
            #expect(both.count == 2 && both.allSatisfy { $0 > 0 && $0 < 1000 }, "\(codec): \(cells[i])")
            #expect(Double(cells[i + 2]) != nil, "\(codec) − its direct read: \(cells[i + 2])")
        }
        #expect(md.contains("Pictures the fallback encoded while nothing needed it: 0 "), "\(md)")
        let fallback = try #require(row("the fallback alone").flatMap { Double($0[1]) }, "\(md)")
        let peer = try #require(row("one ffmpeg").flatMap { Double($0[1]) }, "\(md)")
        #expect(fallback > 1 && peer > 1, "the fallback \(fallback) %, ffmpeg \(peer) %")
        #expect(md.contains("Its first viewer's first picture: ") && !md.contains("first picture: – ms") && !md.contains("against – ms"), "\(md)")
    }
}
