import Testing
import Foundation
import TestSupport
import Bench
import StampedSource
import Relay
import RelayAPI

/// A stamped camera across a real lossy link for a minute (its own network namespace, a veth
/// pair, 2 % of UDP packets dropped on the way in, all delayed 30 ± 10 ms): a preview with
/// `freshness: clean` shows no damaged picture — it holds the last clean one, marked, until the
/// next keyframe — while a `latest` preview of the same camera shows what the decoder made of
/// the losses, and never stands still for longer than a GOP. "Damaged" is judged
/// by an independent reader: each picture's stamp names its frame, the test pattern is drawn
/// again for it and compared (PictureCheck), so neither FFmpeg's flags nor LiveRelay's own loss
/// detection decides. The same stream's classic HLS keeps every segment decodable (a keyframe
/// that lost its PPS gets the SDP's parameter sets in front).
@Suite(.ownThreads, .serialized, .tags(.exclusive)) struct LossyLinkTests {
    /// The stream `name` as the API shows it; nil when nothing (or not a stream) answers.
    static func view(_ port: Int, _ name: String) -> StreamView? {
        Servers.apiIfAny(StreamView.self, "http://127.0.0.1:\(port)/api/streams/\(name)", maxTime: 2)
    }

    /// What a reader saw: pictures judged clean or damaged, unreadable ones, and repeats (the
    /// same stamp again: a held picture shown again).
    struct Seen: CustomStringConvertible {
        var clean = 0, damaged = 0, unreadable = 0, repeats = 0
        var shown: Int { clean + damaged + unreadable }
        var damagedShare: Double { Double(damaged + unreadable) / Double(max(1, shown)) }
        var description: String { "\(shown) shown: \(clean) clean, \(damaged) damaged, \(unreadable) unreadable; \(repeats) repeats" }

        init(_ verdicts: [PictureCheck.Verdict]) {
            var last: UInt32?
            for v in verdicts {
                switch v {
                case .unreadable: unreadable += 1
                case .clean(let s, _), .damaged(let s, _):
                    if s.frameNumber == last { repeats += 1; continue }
                    last = s.frameNumber
                    if v.isClean { clean += 1 } else { damaged += 1 }
                }
            }
        }
    }

    /// A viewer of an MJPEG preview: ffmpeg decodes it to grey as it arrives; each picture is
    /// judged and timed on arrival.
    final class Watcher: @unchecked Sendable {
        // Safety: `pictures` is guarded by `lock`; the rest is set in init.
        struct Picture { let verdict: PictureCheck.Verdict; let arrivedMs: Double }
        private let process = Process()
        private let lock = NSLock()
        private var pictures: [Picture] = []
        private let done = DispatchSemaphore(value: 0)

        init(url: String, width: Int, height: Int) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            process.arguments = ["-hide_banner", "-loglevel", "error", "-fflags", "nobuffer", "-f", "mpjpeg", "-i", url, "-fps_mode", "passthrough",
                                 "-vf", "scale=\(width):\(height)", "-f", "rawvideo", "-pix_fmt", "gray", "-"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let reader = out.fileHandleForReading
            let t = Thread { [self] in
                let size = width * height
                var picture = [UInt8]()
                picture.reserveCapacity(size)
                while let chunk = try? reader.read(upToCount: size - picture.count), !chunk.isEmpty {
                    picture += chunk
                    guard picture.count == size else { continue }
                    let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e6
                    let v = picture.withUnsafeBufferPointer { PictureCheck.judge(luma: $0.baseAddress!, stride: width, width: width, height: height) }
                    lock.withLock { pictures.append(Picture(verdict: v, arrivedMs: now)) }
                    picture.removeAll(keepingCapacity: true)
                }
                done.signal()
            }
            t.start()
        }

        /// Stops watching: every picture seen, in order.
        func stop() -> [Picture] {
            process.terminate()
            _ = done.wait(timeout: .now() + 10)
            return lock.withLock { pictures }
        }
    }

    /// The longest time the picture stood still, in ms: between two new pictures (one with the
    /// previous picture's stamp again is not new).
    static func longestStall(_ pictures: [Watcher.Picture]) -> Double {
        var lastNew: Double?
        var lastFrame: UInt32?
        var longest = 0.0
        for p in pictures {
            if let f = p.verdict.stamp?.frameNumber, f == lastFrame { continue }
            lastFrame = p.verdict.stamp?.frameNumber
            if let lastNew { longest = max(longest, p.arrivedMs - lastNew) }
            lastNew = p.arrivedMs
        }
        return longest
    }

    @Test(.enabled(if: getuid() == 0, "needs root for a network namespace and iptables"))
    func aCleanPreviewHoldsItsLastCleanPictureWhileALossyLinkDamagesTheOthers() throws {
        let lab = try NetworkNamespace(tag: "loss", net: 215)
        defer { lab.tearDown() }
        let camAddress = lab.address
        // The camera: gst-rtsp-server in the namespace, serving the stamped source it receives
        // over loopback there (as the latency bench's camera).
        let camPort = FreePort.tcp(), udp = FreePort.udp()
        let mount = "/cam=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=0 )"
        let (ipCmd, camArgs) = lab.command(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/rtsp_server.py").path,
                                                            "--port", String(camPort), "--address", camAddress, "--mount", mount])
        let camera = try ChildProcess(ipCmd, camArgs)
        defer { camera.stop() }
        try #require(camera.waitFor("ready", timeout: 15), "\(camera.stderr)")
        let (_, sourceArgs) = lab.command(Paths.liverelay, ["publish", "udp://127.0.0.1:\(udp)",
                                                            "--source", "testsrc://?size=640x360&fps=30&gop=30&bitrate=1000", "--duration", "120"])
        let source = try ChildProcess(ipCmd, sourceArgs)
        defer { source.stop() }
        let cam = "rtsp://\(camAddress):\(camPort)/cam"
        let (serve, port, dir) = try Servers.serve("""
        streams:
          plain:
            source: \(cam)
            transport: udp
            preview: { freshness: latest, fps: 30, quality: 80 }
            hls: { variant: mpegts, segment_duration: 1, segment_count: 30 }
          clean:
            source: \(cam)
            transport: udp
            preview: { freshness: clean, fps: 30, quality: 80 }
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            let live = ["plain", "clean"].allSatisfy { n in
                let s = Self.view(port, n)?.stream
                return s?.state == .live && (s?.fpsIn ?? 0) > 20
            }
            if live { break }
            usleep(200_000)
        }
        // 2 % of the UDP packets coming in from the camera are lost, and all are delayed by
        // 30 ± 10 ms (so they also arrive out of order).
        try lab.addInputRule(["-p", "udp", "-m", "statistic", "--mode", "random", "--probability", "0.02", "-j", "DROP"])
        try lab.addDelay(delayMs: 30, jitterMs: 10)

        // Both previews watched at once for 30 s, each picture judged as it arrives.
        let watchers = try ["plain", "clean"].map { try Watcher(url: "http://127.0.0.1:\(port)/streams/\($0)/preview.mjpg", width: 640, height: 360) }
        usleep(30_000_000)
        let watched = watchers.map { $0.stop() }
        var seen: [String: Seen] = [:]
        for (n, w) in zip(["plain", "clean"], watched) { seen[n] = Seen(w.map(\.verdict)) }
        let plain = seen["plain"]!, clean = seen["clean"]!
        let cleanView = Self.view(port, "clean")
        let status = cleanView?.stream
        let preview = cleanView?.sink(named: "preview")
        let held = preview?.counters.dropped[.damaged] ?? 0
        let stall = Self.longestStall(watched[0])
        print("LossyLinkTests: latest preview \(plain), longest stall \(Int(stall)) ms; clean preview \(clean); clean stream: \(status.map { "\($0.damageEvents)" } ?? "-") damage events, \(status.map { "\($0.rtpPacketsLost)" } ?? "-") RTP packets lost, \(held) pictures held back")

        // HLS from the lossy source: every segment with a keyframe decodes on its own (damaged
        // pictures, no lost segment).
        let playlist = (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "http://127.0.0.1:\(port)/streams/plain/hls/index.m3u8"], timeout: 5).stdout) ?? ""
        let segments = playlist.split(separator: "\n").filter { $0.hasSuffix(".ts") }
        #expect(segments.count >= 10, "\(playlist)")
        var undecodable: [String] = []
        for seg in segments {
            let file = dir.appendingPathComponent(String(seg))
            _ = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "-o", file.path, "http://127.0.0.1:\(port)/streams/plain/hls/\(seg)"], timeout: 5)
            let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "quiet", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                                             "-of", "default=nw=1:nk=1", file.path], timeout: 20)
            guard r.status != 0 || (Int(r.stdout.split(separator: "\n").first ?? "") ?? 0) < 10 else { continue }
            // A segment whose keyframe the link destroyed (cut on time, P-frames only) plays in
            // sequence but not on its own; one that holds a keyframe must decode on its own.
            let keys = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "quiet", "-select_streams", "v", "-show_entries", "packet=flags", "-of", "csv=p=0", file.path], timeout: 20)
            if keys.stdout.contains("K") { undecodable.append("\(seg): \(r.stdout)") }
        }
        #expect(undecodable.isEmpty, "\(undecodable)")

        // The link damaged pictures: the plain preview shows some (else this proves nothing).
        #expect(plain.shown > 150, "\(plain)")
        #expect(plain.damaged + plain.unreadable >= 5, "the lossy link damaged nothing the latest preview showed: \(plain)")
        // The latest preview never stalled for longer than a GOP (1 s): losses cost pictures,
        // not seconds.
        #expect(stall <= 1000, "the latest preview stalled for \(Int(stall)) ms")
        // Link health per track in /metrics: the losses, the reorders the jitter made, the jitter.
        let metrics = (try? ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"], timeout: 10).stdout) ?? ""
        let track = ["stream": "plain", "media": "video"]
        print("LossyLinkTests: link of plain: \(MetricsText.sum(metrics, "liverelay_rtp_packets_lost_total", track)) lost, \(MetricsText.sum(metrics, "liverelay_rtp_packets_reordered_total", track)) reordered of \(MetricsText.sum(metrics, "liverelay_rtp_packets_received_total", track)), jitter \(MetricsText.sum(metrics, "liverelay_rtp_jitter_seconds", track)) s")
        #expect(MetricsText.sum(metrics, "liverelay_rtp_packets_received_total", track) > 1000, "\(metrics.split(separator: "\n").filter { $0.contains("rtp") })")
        #expect(MetricsText.sum(metrics, "liverelay_rtp_packets_lost_total", track) > 0)
        #expect(MetricsText.sum(metrics, "liverelay_rtp_packets_reordered_total", track) > 0)
        #expect(MetricsText.sum(metrics, "liverelay_rtp_jitter_seconds", track) > 0.001)
        #expect(MetricsText.sum(metrics, "liverelay_stream_bitrate_in_bits_per_second", ["stream": "plain"]) > 100_000)
        // LiveRelay saw the losses, and the clean preview held pictures back.
        #expect((status?.rtpPacketsLost ?? 0) > 0, "\(String(describing: status))")
        #expect((status?.damageEvents ?? 0) > 0, "\(String(describing: status))")
        #expect(held > 0, "\(String(describing: preview))")
        // It showed its last clean picture again (marked as held) when damage began.
        #expect(clean.repeats > 0, "\(clean)")
        // The clean preview shows pictures, and (almost) none of them damaged.
        #expect(clean.shown > 60, "\(clean)")
        #expect(clean.damagedShare <= plain.damagedShare / 4, "clean \(clean) against latest \(plain)")
        #expect(clean.damagedShare < 0.03, "\(clean)")
    }
}
