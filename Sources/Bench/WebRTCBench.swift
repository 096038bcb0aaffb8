import Foundation
import Synchronization
import WebRTC
import Relay
import RelayAPI

/// `liverelay bench webrtc`: WebRTC out (WHEP) against the other ways of watching the same
/// camera, in one run.
///
/// Latency: a camera (gst-rtsp-server serving LiveRelay's stamped test source) is pulled by
/// `serve`; capture → screen is read from the stamp in every picture Chromium shows, over WHEP
/// on the public page and in the ops wall's WebCodecs tile, and from every picture ffmpeg
/// decodes reading the camera directly. The three take turns, `rounds` times.
///
/// Cost: the server's CPU with no viewer, then with `viewers` WHEP viewers of one stream
/// (GStreamer's webrtcbin, which decrypts and drops: no decoding on the client's side), and the
/// drops the server counted for them.
///
/// Load: the same with `load` light viewers of the bench's own (`LoadViewer`: ICE, a DTLS
/// client, SRTP decrypted and counted by sequence number, no decoding) in one process, first 20
/// of them, then `load`: the server's CPU per viewer, its drops, and what the viewers missed.
public struct WebRTCBenchmark {
    /// browser.py's JSON line: the player the page took and the median stamp latency (ms).
    struct BrowserLine: Decodable {
        var player: String?
        var p50: Double?
        var error: String?
    }

    public var rounds = 3
    public var seconds: Double = 8
    public var viewers = 20
    public var load = 0
    /// Rounds of WHIP publish → picture on the ops wall (Chromium's fake camera); 0 skips it.
    public var whip = 0
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let scripts = LatencyRun.scriptsDirectory(near: me)
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("webrtc-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        // The camera: the stamped source over UDP (MPEG-TS) into gst-rtsp-server.
        let camPort = LatencyRun.freePort(), udp = LatencyRun.freePort()
        let mount = "/cam=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 )"
        let camera = try ChildProcess(name: "camera", "/usr/bin/python3", ["-u", scripts + "/rtsp_server.py", "--port", String(camPort), "--mount", mount])
        defer { camera.stop() }
        guard camera.waitFor("ready", timeout: 20) else { throw BenchError("the RTSP camera did not start: \(camera.stderr.suffix(300))") }
        let duration = Int(Double(rounds) * 3 * (seconds + 12) + 120)
        let source = try ChildProcess(name: "source", me, ["publish", "udp://127.0.0.1:\(udp)", "--source", "testsrc://?size=640x360&fps=30&gop=30&bitrate=1500",
                                                           "--duration", String(duration)])
        defer { source.stop() }
        let cam = "rtsp://127.0.0.1:\(camPort)/cam"

        // WebRTC on the machine's global address too: webrtcbin (libnice) does not use loopback.
        let global = Self.globalAddress()
        var yaml = global.map { "auth:\n  anonymous: [read, publish]\nserver:\n  webrtc: {listen: \"\($0):0\"}\n  limits: {per_client: {viewers: \(max(64, load + 8))}}\n" }
            ?? "server:\n  limits: {per_client: {viewers: \(max(64, load + 8))}}\n"
        yaml += "streams:\n  cam: {source: \"\(cam)\", transport: udp, preview: false}\n  phone: {source: publish, preview: false}\n"
        let (serve, port) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("serve.yaml"))
        defer { serve.stop() }
        Thread.sleep(forTimeInterval: 4)
        print("bench: the stamped source (640x360, 30 fps, GOP 1 s) through gst-rtsp-server; \(rounds) rounds of \(Int(seconds)) s per reader")

        // Latency, in turns.
        var p50: [String: [Double]] = [:]
        func browser(_ url: String, _ mode: [String]) -> Double? {
            guard let r = try? ChildProcess.run("/usr/bin/python3", [scripts + "/browser.py", url] + mode + ["--seconds", String(seconds), "--timeout", "30"], timeout: seconds + 60),
                  let line = r.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                  let j = try? JSONDecoder().decode(BrowserLine.self, from: Data(line.utf8)) else { return nil }
            if let player = j.player, player != "webrtc" { print("bench: the page played \(player), not WebRTC: \(line)") }
            return j.p50
        }
        func ffmpegDirect() throws -> Double? {
            let ff = try ChildProcess(name: "ffmpeg", "/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "udp", "-fflags", "nobuffer", "-flags", "low_delay",
                                                                        "-i", cam, "-f", "rawvideo", "-pix_fmt", "gray", "-"], rawStdout: true)
            defer { ff.stop() }
            let reader = StampReader(handle: ff.rawStdout!.fileHandleForReading, width: 640, height: 360)
            Thread.sleep(forTimeInterval: 2)
            reader.startRecording()
            Thread.sleep(forTimeInterval: seconds)
            reader.stopRecording()
            let lat = reader.all.map { Double($0.receivedMs - $0.captureMs) }.sorted()
            return lat.isEmpty ? nil : lat[lat.count / 2]
        }
        for round in stride(from: 1, through: rounds, by: 1) {
            if let v = browser("http://127.0.0.1:\(port)/streams/cam/watch", ["--stamps", "video"]) { p50["WHEP in Chromium (public page)", default: []].append(v) }
            if let v = browser("http://127.0.0.1:\(port)/?only=cam&measure=cam", ["--stamps-tile", "cam", "--size", "1280x800"]) { p50["ops wall tile in Chromium (WebCodecs)", default: []].append(v) }
            if let v = try ffmpegDirect() { p50["ffmpeg reading the camera directly", default: []].append(v) }
            print("bench: round \(round): " + p50.keys.sorted().map { "\($0) \(p50[$0]!.last.map { String(format: "%.0f", $0) } ?? "-") ms" }.joined(separator: "; "))
        }

        // Cost per viewer.
        func cpu(during: Double) -> Double {
            let c0 = serve.cpuSeconds, t0 = Date()
            Thread.sleep(forTimeInterval: during)
            return (serve.cpuSeconds - c0) / Date().timeIntervalSince(t0) * 100
        }
        let idle = cpu(during: seconds)
        var perViewer: Double?, watching = 0, drops = "-"
        if global != nil && viewers > 0 {
            let clients = try (0..<viewers).map { i in
                try ChildProcess(name: "whep\(i)", "/usr/bin/python3", [scripts + "/whep_gst.py", "http://127.0.0.1:\(port)/streams/cam/whep",
                                                                        "--seconds", String(seconds + 12), "--no-decode"])
            }
            Thread.sleep(forTimeInterval: 8)
            let busy = cpu(during: seconds)
            let status = (try? ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 5).stdout) ?? ""
            let sinks = ((try? RelayAPI.decode(StreamView.self, from: Data(status.utf8)))?.sinks ?? [])
                .filter { $0.kind == .webrtc }
            watching = sinks.count
            let dropped = sinks.map(\.counters.droppedTotal).reduce(0, +)
            drops = String(dropped)
            for c in clients { _ = c.wait(timeout: 30); c.stop() }
            perViewer = watching > 0 ? (busy - idle) / Double(watching) : nil
        }

        var loadRows: [String] = []
        if load > 0 {
            let certificate = try LoadViewer.Certificate()
            for count in Array(Set([min(20, load), load])).sorted() {
                let r = try loadPhase(count, certificate: certificate, port: port, work: work, cpu: cpu)
                let perViewer = (r.busy - idle) / Double(count)
                loadRows.append("| \(count) | \(r.connected) | \(String(format: "%.1f", r.busy)) | \(String(format: "%.2f", perViewer)) | \(r.serverDrops) | \(r.packets) | \(r.missing) | \(r.reports) |")
                print("bench: \(count) load viewers: \(r.connected) connected, server \(String(format: "%.1f", r.busy)) % (\(String(format: "%.2f", perViewer)) % per viewer), "
                      + "\(r.serverDrops) dropped by the server, \(r.packets) packets received, \(r.missing) missing, \(r.reports) sender reports")
            }
        }

        // WHIP publish → the picture on the wall: from the stream turning live (the publisher's
        // first keyframe is in) to the wall's tile first painting it.
        var whipToWall: [Double] = []
        for round in stride(from: 1, through: whip, by: 1) {
            // The publisher's first keyframe reached the server when the stream turns live (its
            // source opens at the first keyframe).
            func live() -> Bool {
                ChildProcess.decode(StreamView.self, from: "http://127.0.0.1:\(port)/api/streams/phone")?.stream.state == .live
            }
            // The last round's publisher has left (its source ends when its media stops).
            let gone = Date().addingTimeInterval(30)
            while Date() < gone, live() { usleep(200_000) }
            let wall = try ChildProcess(name: "wall", "/usr/bin/python3", [scripts + "/browser.py", "http://127.0.0.1:\(port)/?only=phone", "--wall",
                                                                      "--seconds", "40", "--timeout", "30"])
            defer { wall.stop() }
            guard wall.waitFor("watching", timeout: 30) else { print("bench: the wall did not open: \(wall.stderr.suffix(300))"); continue }
            let phone = try ChildProcess(name: "phone", "/usr/bin/python3", [scripts + "/browser.py", "http://127.0.0.1:\(port)/streams/phone/publish?auto",
                                                                        "--fake-camera", "--wait-text", "#state=connected", "--seconds", "20", "--hold", "6", "--timeout", "30"])
            defer { phone.stop() }
            let until = Date().addingTimeInterval(30)
            while Date() < until, !live() { usleep(5_000) }
            guard live() else { print("bench: round \(round): the publisher did not go live: \(phone.stdout.suffix(300))"); continue }
            let connected = Date()
            guard wall.waitFor("painting phone", timeout: 15) else { print("bench: round \(round): the wall never painted the publisher"); continue }
            let ms = Date().timeIntervalSince(connected) * 1000
            whipToWall.append(ms)
            print("bench: WHIP round \(round): first keyframe in (stream live) → painted on the wall in \(Int(ms)) ms")
            phone.stop()
            wall.stop()
            Thread.sleep(forTimeInterval: 3)
        }

        var md = "WebRTC (WHEP) against the ops wall's tile and ffmpeg, one run: the stamped source (640x360, 30 fps, GOP 1 s) through gst-rtsp-server, "
        md += "pulled by `serve` over RTP/UDP; \(rounds) rounds of \(Int(seconds)) s per reader, taking turns.\n\n"
        md += "| reader | capture → screen p50 per round (ms) | median of rounds (ms) |\n|---|---|---:|\n"
        for k in p50.keys.sorted() {
            let v = p50[k]!.sorted()
            md += "| \(k) | \(p50[k]!.map { String(format: "%.0f", $0) }.joined(separator: ", ")) | \(String(format: "%.0f", v[v.count / 2])) |\n"
        }
        md += "\nServer CPU with no viewer: \(String(format: "%.1f", idle)) % of a core. "
        if let perViewer {
            md += "With \(watching) WHEP viewers (GStreamer webrtcbin, no decoding): \(String(format: "%.2f", perViewer)) % of a core per viewer above that; \(drops) packets dropped by the server for them.\n"
        } else {
            md += "No WHEP viewers measured (webrtcbin needs a global IPv4 address).\n"
        }
        if !whipToWall.isEmpty {
            let v = whipToWall.sorted()
            md += "\nWHIP publish (Chromium's fake camera) → first picture on the ops wall, from the stream turning live (its first keyframe in): "
            md += whipToWall.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " ms (median \(String(format: "%.0f", v[v.count / 2])) ms).\n"
        }
        if !loadRows.isEmpty {
            md += "\nLight viewers of the bench's own (ICE, DTLS, SRTP decrypted and counted; no decoding), one process, \(Int(seconds)) s each:\n\n"
            md += "| viewers | connected | server CPU (% of a core) | per viewer above idle | dropped by the server | packets received | missing at the viewers | sender reports |\n"
            md += "|---:|---:|---:|---:|---:|---:|---:|---:|\n" + loadRows.joined(separator: "\n") + "\n"
        }
        print(md)
        try md.write(to: URL(fileURLWithPath: out).appendingPathComponent("webrtc.md"), atomically: true, encoding: .utf8)
    }

    struct LoadResult {
        var connected = 0, packets = 0, missing = 0, reports = 0, serverDrops = 0
        var busy = 0.0
    }

    /// `count` light viewers of `cam` at once: offers posted, each viewer on a thread of its own,
    /// the server's CPU over `seconds` once they play, then the server's drops for them; the
    /// sessions are deleted before the next phase.
    func loadPhase(_ count: Int, certificate: LoadViewer.Certificate, port: Int, work: URL, cpu: (Double) -> Double) throws -> LoadResult {
        let viewers = (0..<count).map { _ in LoadViewer(certificate: certificate) }
        var sessions: [(viewer: LoadViewer, answer: String, location: String)] = []
        for (i, v) in viewers.enumerated() {
            let file = work.appendingPathComponent("offer-\(i).sdp")
            try v.offer.write(to: file, atomically: true, encoding: .utf8)
            let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-i", "--max-time", "5", "-H", "Content-Type: application/sdp", "--data-binary", "@" + file.path,
                                                          "http://127.0.0.1:\(port)/streams/cam/whep"], timeout: 10)
            let text = r.stdout.replacingOccurrences(of: "\r\n", with: "\n")
            guard let split = text.range(of: "\n\n"), text.hasPrefix("HTTP/1.1 201") else {
                throw BenchError("the WHEP offer of load viewer \(i) was not answered: \(r.stdout.prefix(200))")
            }
            let location = text[..<split.lowerBound].split(separator: "\n").first { $0.lowercased().hasPrefix("location:") }
                .map { $0.dropFirst(9).trimmingCharacters(in: .whitespaces) } ?? ""
            sessions.append((v, String(text[split.upperBound...]), location))
        }
        let settle = 6.0, lasting = settle + seconds + 3
        let tallies = Mutex<[LoadViewer.Tally]>([])
        let group = DispatchGroup()
        for s in sessions {
            group.enter()
            let t = Thread {
                let tally = s.viewer.run(answer: s.answer, seconds: lasting)
                tallies.withLock { $0.append(tally) }
                group.leave()
            }
            t.stackSize = 1 << 18
            t.start()
        }
        Thread.sleep(forTimeInterval: settle)
        // The server's drops for these viewers while they play (a queue that aged while its
        // viewer's DTLS was not up yet, before the window, is not counted).
        func drops() -> [String: [String: Int]] {
            let sinks = (ChildProcess.decode(StreamView.self, from: "http://127.0.0.1:\(port)/api/streams/cam")?.sinks ?? [])
                .filter { $0.kind == .webrtc }
            var out: [String: [String: Int]] = [:]
            for sink in sinks { out[sink.name] = sink.counters.dropped.byName }
            return out
        }
        let before = drops()
        var result = LoadResult()
        result.busy = cpu(seconds)
        var reasons: [String: Int] = [:]
        for (name, after) in drops() {
            for (k, v) in after { reasons[k, default: 0] += v - (before[name]?[k] ?? 0) }
        }
        result.serverDrops = reasons.values.reduce(0, +)
        if result.serverDrops > 0 { print("bench: \(count) load viewers: the server's drops by reason: \(reasons.filter { $0.value > 0 })") }
        _ = group.wait(timeout: .now() + 30)
        for s in sessions where s.location.hasPrefix("/") {
            _ = try? ChildProcess.run("/usr/bin/curl", ["-s", "-X", "DELETE", "--max-time", "2", "http://127.0.0.1:\(port)\(s.location)"], timeout: 5)
        }
        for t in tallies.withLock({ $0 }) {
            if t.connected { result.connected += 1 } else if let e = t.error { print("bench: a load viewer: \(e)") }
            result.packets += t.packets
            result.missing += t.missing
            result.reports += t.senderReports
        }
        Thread.sleep(forTimeInterval: 2)
        return result
    }

    /// This machine's first global IPv4 address (libnice, under webrtcbin, leaves loopback out
    /// of its candidates and cannot reach a server there).
    public static func globalAddress() -> String? {
        let r = try? ChildProcess.run("/usr/sbin/ip", ["-4", "-o", "addr", "show", "scope", "global"], timeout: 5)
        return r?.stdout.split(separator: "\n").compactMap { line -> String? in
            let f = line.split(separator: " ")
            guard let i = f.firstIndex(of: "inet"), i + 1 < f.count else { return nil }
            return f[i + 1].split(separator: "/").first.map(String.init)
        }.first
    }
}
