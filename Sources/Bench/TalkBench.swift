import Foundation
import Glibc
import Relay

/// `liverelay bench talk`: mouth to camera. GStreamer's ONVIF camera
/// (`scripts/backchannel_camera.py`) notes when each packet of its backchannel arrives; the
/// sound is a click every 500 ms.
/// - LiveRelay: Chromium's fake microphone plays the clicks from a file, pushed to talk on the
///   wall (held `t`); a click's moment is the microphone's opening (`wall.talk.micOpenedAt`)
///   plus its place in the file. Its path: capture, Opus, WebRTC, LiveRelay's talk session
///   (decoded, PCMU), the camera's RTSP backchannel over TCP. The serve's CPU while talking,
///   less its CPU over as long without talk, is the talk session's.
/// - The peer, in the same run: GStreamer's rtspsrc talking to the same camera straight
///   (`scripts/backchannel_talk.py --clicks`), timed from when it hands rtspsrc the packet that
///   starts each click (after its 20 ms of sound): the camera's own floor.
/// Run from the checkout.
public struct TalkBenchmark {
    public var seconds = 10.0
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let python = "/usr/bin/python3"
        for s in ["scripts/backchannel_camera.py", "scripts/backchannel_talk.py", "scripts/browser.py"] where !FileManager.default.fileExists(atPath: s) {
            throw BenchError("run from the checkout: \(s) is needed")
        }
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("talk-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let clicks = work.appendingPathComponent("clicks.wav").path
        let length = Int(seconds) + 3
        // A 5 ms burst of 1 kHz every 500 ms from 0.5 s on, then silence.
        let made = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi",
                                                           "-i", "aevalsrc=if(gte(t\\,0.5)*lt(mod(t\\,0.5)\\,0.005)\\,0.5*sin(2*PI*1000*t)\\,0):s=48000:d=\(length)",
                                                           "-af", "apad=pad_dur=0.5", "-c:a", "pcm_s16le", clicks], timeout: 30)
        guard made.status == 0 else { throw BenchError("ffmpeg: \(made.output.suffix(300))") }
        let camera = try ChildProcess(name: "camera", python, ["scripts/backchannel_camera.py", "0", work.path])
        defer { camera.stop() }
        guard camera.waitFor("rtsp://", timeout: 20),
              let port = camera.stdout.split(separator: " ").first?.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
            throw BenchError("the backchannel camera did not start: \(camera.stderr.suffix(300))")
        }
        let url = "rtsp://127.0.0.1:\(port)/pcmu"

        // LiveRelay, from the wall.
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let (serve, http) = try ChildProcess.serve(me: me, yaml: "streams:\n  door: {source: \"\(url)\", talk: true, transport: tcp, preview: false}\n",
                                                   file: work.appendingPathComponent("talk.yaml"))
        var ready = false
        for _ in 0..<100 where !ready {
            if case .success(let a) = BoundedHTTP.sendWaiting(method: "GET", url: "http://127.0.0.1:\(http)/streams/door/talk", timeout: 2, maxBody: 4096) {
                ready = a.status == 200 && String(decoding: a.body, as: UTF8.self).contains("\"available\":true")
            }
            if !ready { usleep(200_000) }
        }
        guard ready else { serve.stop(); throw BenchError("the camera's backchannel was not set up: \(serve.stderr.suffix(300))") }
        // The wall open on the camera for as long without talk, then talking: the difference in
        // serve's CPU is the talk session's (the wall's video to the page is in both).
        let pid = serve.process.processIdentifier
        var cpu: [Double] = []
        var opened: Double?
        for steps in ["key:1;sleep:1;sleep:\(seconds)", "key:1;sleep:1;hold:t:\(seconds);eval:window.wall.talk.micOpenedAt"] {
            let c0 = Self.cpu(pid), t0 = Self.now()
            let browser = try ChildProcess.run(python, ["scripts/browser.py", "http://127.0.0.1:\(http)/", "--fake-mic", clicks, "--keys-after", "2",
                                                        "--steps", steps, "--seconds", "0.2"], timeout: seconds + 60)
            cpu.append((Self.cpu(pid) - c0) / (Self.now() - t0))
            opened = BrowserEvals<Double?>.of(browser.stdout).first ?? nil
        }
        serve.stop()
        guard let opened else { throw BenchError("the wall did not talk") }
        let heard = try arrivals(in: work)
        let relay = heard.map { at -> Double in
            // The click before the arrival (the clicks are 500 ms apart, from 0.5 s into the file).
            let k = ((at - opened) / 500).rounded(.down)
            return at - (opened + k * 500)
        }.filter { $0 >= 0 }

        // GStreamer straight to the camera: a new session, a new file.
        let gst = try ChildProcess.run(python, ["scripts/backchannel_talk.py", url, String(seconds), "tcp", "--clicks"], timeout: seconds + 30)
        let pushed = gst.stdout.split(separator: "\n").compactMap { $0.hasPrefix("click ") ? Double($0.dropFirst(6)) : nil }
        let direct = try arrivals(in: work).compactMap { at in pushed.last { $0 <= at }.map { at - $0 } }

        // A field unit: Chromium publishing by WHIP (the publish page) hears a second Chromium's
        // push-to-talk; the unit's page notes when each click arrives (its received track, read
        // every 5 ms: playout included).
        let (unitServe, unitHTTP) = try ChildProcess.serve(me: me, yaml: "streams:\n  unit: {source: publish, preview: false}\n",
                                                           file: work.appendingPathComponent("unit.yaml"))
        defer { unitServe.stop() }
        // One expression (browser.py's steps are split at semicolons).
        let detect = "(window.clicks = [], window.tctx = new AudioContext(), window.tan = window.tctx.createAnalyser(), window.tan.fftSize = 256, "
            + "window.tctx.createMediaStreamSource(document.getElementById('talkback').srcObject).connect(window.tan), window.tw = new Float32Array(256), "
            + "window.tq = 0, setInterval(() => (window.tan.getFloatTimeDomainData(window.tw), window.tm = window.tw.reduce((m, v) => Math.max(m, Math.abs(v)), 0), "
            + "window.tm > 0.05 ? (window.tq >= 40 && window.clicks.push(Date.now()), window.tq = 0) : window.tq++), 5), window.tctx.state)"
        let unit = try ChildProcess(name: "unit", python, ["scripts/browser.py", "http://127.0.0.1:\(unitHTTP)/streams/unit/publish?auto", "--fake-camera",
                                                           "--keys-after", "1", "--steps", "sleep:5;eval:\(detect);sleep:\(seconds + 10);eval:JSON.stringify(window.clicks)",
                                                           "--seconds", "0.2"])
        defer { unit.stop() }
        var listening = false
        for _ in 0..<100 where !listening {
            if case .success(let a) = BoundedHTTP.sendWaiting(method: "GET", url: "http://127.0.0.1:\(unitHTTP)/streams/unit/talk", timeout: 2, maxBody: 4096) {
                listening = String(decoding: a.body, as: UTF8.self).contains("\"available\":true")
            }
            if !listening { usleep(200_000) }
        }
        usleep(4_000_000)
        let wall = try ChildProcess.run(python, ["scripts/browser.py", "http://127.0.0.1:\(unitHTTP)/", "--fake-mic", clicks, "--keys-after", "2",
                                                 "--steps", "key:1;sleep:1;hold:t:\(seconds);eval:window.wall.talk.micOpenedAt", "--seconds", "0.2"], timeout: seconds + 60)
        _ = unit.wait(timeout: seconds + 40)
        var field: [Double] = []
        if let talked = BrowserEvals<Double?>.of(wall.stdout).first ?? nil,
           let text = BrowserEvals<String>.of(unit.stdout).last, let heard = try? JSONDecoder().decode([Double].self, from: Data(text.utf8)) {
            field = heard.map { at in at - (talked + ((at - talked) / 500).rounded(.down) * 500) }.filter { $0 >= 0 }
        }

        func p(_ v: [Double], _ q: Double) -> String {
            guard !v.isEmpty else { return "-" }
            let s = v.sorted()
            return String(format: "%.1f", s[min(s.count - 1, Int(Double(s.count) * q))])
        }
        let table = """
        Talk back, mouth to camera (GStreamer's ONVIF camera, PCMU/8000 backchannel over RTSP/TCP), a click every 500 ms for \(Int(seconds)) s, ms:
        | path | clicks heard | p50 | p95 | max |
        |---|---:|---:|---:|---:|
        | LiveRelay: Chromium's microphone → WebRTC (Opus) → talk session (PCMU) → backchannel | \(relay.count) | \(p(relay, 0.5)) | \(p(relay, 0.95)) | \(p(relay, 1)) |
        | GStreamer rtspsrc straight to the camera (from the packet handed over) | \(direct.count) | \(p(direct, 0.5)) | \(p(direct, 0.95)) | \(p(direct, 1)) |
        | LiveRelay to a field unit: the wall's Chromium → WebRTC → the WHIP publisher's Chromium (its received track, playout included) | \(field.count) | \(p(field, 0.5)) | \(p(field, 0.95)) | \(p(field, 1)) |

        The first click LiveRelay's path brought came \(heard.first.map { String(format: "%.0f", $0 - opened) } ?? "-") ms after the microphone opened (clicks are at 500, 1000, … ms of its file).
        serve's CPU with the wall open on the camera: \(String(format: "%.2f", cpu[1] * 100)) % of a core while talking, \(String(format: "%.2f", cpu[0] * 100)) % without: the talk session \(String(format: "%.2f", (cpu[1] - cpu[0]) * 100)) %.
        """
        print(table)
        try table.write(to: URL(fileURLWithPath: out).appendingPathComponent("talk.md"), atomically: true, encoding: .utf8)
    }

    /// When each click the camera wrote began to arrive (Unix ms): the onsets in its µ-law file
    /// (loud after 200 ms of quiet; one byte per sample), each placed in the buffer that
    /// brought it (`back-pcmu.arrivals`: arrival, offset, bytes).
    func arrivals(in work: URL) throws -> [Double] {
        let log = (try? String(contentsOf: work.appendingPathComponent("back-pcmu.arrivals"), encoding: .utf8)) ?? ""
        let buffers = log.split(separator: "\n").compactMap { l -> (at: Double, offset: Int, bytes: Int)? in
            let f = l.split(separator: " ")
            guard f.count == 3, let at = Double(f[0]), let o = Int(f[1]), let n = Int(f[2]) else { return nil }
            return (at, o, n)
        }
        let raw = work.appendingPathComponent("heard.raw")
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "mulaw", "-ar", "8000", "-ac", "1", "-i",
                                                         work.appendingPathComponent("back-pcmu.ulaw").path, "-f", "s16le", raw.path], timeout: 30)
        guard r.status == 0, let bytes = try? Data(contentsOf: raw) else { return [] }
        var onsets: [Int] = [], quiet = 0
        for i in 0..<(bytes.count / 2) {
            let v = abs(Int(Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8)))
            if v > 2000 {
                if quiet >= 1600 { onsets.append(i) }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        return onsets.compactMap { i in buffers.first { i >= $0.offset && i < $0.offset + $0.bytes }?.at }
    }

    /// The process's CPU seconds so far (user and system, from /proc).
    static func cpu(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let f = stat[stat.index(after: close)...].split(separator: " ")
        guard f.count > 12, let u = Double(f[11]), let s = Double(f[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

