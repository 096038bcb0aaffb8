import Foundation

/// `liverelay bench renditions`: the CPU of a ladder. One 1280x720 30 fps camera
/// (gst-rtsp-server) made into 640x360 and 426x240 by LiveRelay (decode once, scale, libx264
/// per rendition, on demand) and, in the same run, by one ffmpeg process doing the same ladder
/// with the same encoder settings (decode once, split, scale, libx264 veryfast zerolatency, no
/// B-frames) with the source passed through. LiveRelay's CPU is measured with no rendition
/// watched (nothing encodes) and with both watched (an RTSP reader each, outside the process).
public struct RenditionsBenchmark {
    public var seconds: Double = 20
    public var out = "./bench-results"

    public init() {}

    public func run() throws {
        let work = URL(fileURLWithPath: out, isDirectory: true).appendingPathComponent("renditions-work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let camPort = LatencyRun.freePort()
        let launch = "( videotestsrc is-live=true pattern=ball ! video/x-raw,width=1280,height=720,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=3000 ! rtph264pay name=pay0 pt=96 config-interval=1 )"
        let cam = try ChildProcess(name: "camera", "/usr/bin/python3", ["scripts/rtsp_server.py", "--port", String(camPort), "--mount", "/cam=\(launch)"])
        defer { cam.stop() }
        guard cam.waitFor("ready", timeout: 20) else { throw BenchError("gst-rtsp-server did not start (run from the checkout): \(cam.stderr.suffix(300))") }
        let camURL = "rtsp://127.0.0.1:\(camPort)/cam"
        let rtsp = LatencyRun.freePort()
        let yaml = """
        server: {rtsp: {listen: "127.0.0.1:\(rtsp)"}}
        streams:
          cam:
            source: "\(camURL)"
            transport: tcp
            preview: false
            renditions:
              - {name: 360p, height: 360, bitrate: 800k, encoder: software}
              - {name: 240p, height: 240, bitrate: 300k, encoder: software}
        """
        let (serve, _) = try ChildProcess.serve(me: me, yaml: yaml, file: work.appendingPathComponent("config.yaml"))
        defer { serve.stop() }
        Thread.sleep(forTimeInterval: 3)
        func cpu(_ p: ChildProcess) -> Double {
            let a = p.cpuSeconds
            Thread.sleep(forTimeInterval: seconds)
            return (p.cpuSeconds - a) / seconds * 100
        }
        // Nothing watched: the camera is read and passed on, nothing decoded or encoded.
        let idle = cpu(serve)
        let readers = try ["360p", "240p"].map { r in
            try ChildProcess(name: "reader", "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i",
                                                               "rtsp://127.0.0.1:\(rtsp)/cam_\(r)", "-f", "null", "-"])
        }
        Thread.sleep(forTimeInterval: 4)
        let ladder = cpu(serve)
        for r in readers { r.stop() }
        serve.stop()
        Thread.sleep(forTimeInterval: 2)

        // The peer: one ffmpeg, the same ladder, the source passed through.
        let x264 = ["-c:v", "libx264", "-force_key_frames", "source", "-preset", "veryfast", "-tune", "zerolatency", "-bf", "0", "-x264-params", "scenecut=0:sliced-threads=1", "-threads", "2"]
        let ffmpeg = try ChildProcess(name: "ffmpeg", "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", camURL,
            "-filter_complex", "[0:v]split=2[a][b];[a]scale=640:360[o1];[b]scale=426:240[o2]",
            "-map", "0:v", "-c", "copy", "-f", "null", "-",
            "-map", "[o1]"] + x264 + ["-b:v", "800k", "-f", "null", "-", "-map", "[o2]"] + x264 + ["-b:v", "300k", "-f", "null", "-"])
        defer { ffmpeg.stop() }
        Thread.sleep(forTimeInterval: 4)
        let peer = cpu(ffmpeg)
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        var text = "bench renditions: 1280x720 30 fps camera → 640x360 800k + 426x240 300k, libx264 veryfast zerolatency, no B-frames, \(Int(seconds)) s each, \(Int(cores)) cores\n"
        text += "| process | CPU % of a core |\n|---|---|\n"
        text += String(format: "| LiveRelay, no rendition watched | %.1f |\n", idle)
        text += String(format: "| LiveRelay, both renditions watched | %.1f |\n", ladder)
        text += String(format: "| ffmpeg, the same ladder (split, scale, libx264 ×2, source copied) | %.1f |\n", peer)
        text += String(format: "LiveRelay / ffmpeg: %.2f\n", ladder / max(peer, 0.1))
        print(text, terminator: "")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try text.write(toFile: (out as NSString).appendingPathComponent("renditions.md"), atomically: true, encoding: .utf8)
    }
}
