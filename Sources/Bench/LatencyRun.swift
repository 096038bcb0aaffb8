import MediaCore
import StampedSource
import Foundation
import Synchronization
import Relay
import RelayAPI

/// One run of the latency bench: the infrastructure, the scenarios, the files.
final class LatencyRun {
    struct Scenario {
        let name: String
        let path: String
        let input: [String]
        /// The relay process whose CPU and memory the row reports (nil: none between).
        let relay: String?
        let warmup: Double
        /// A page for headless Chromium (hls.js) instead of an ffmpeg reader.
        var page: String? = nil
        /// An HLS media playlist (URL or file) watched for new segments instead of a reader.
        var playlist: String? = nil
        /// With `page`: the ops wall, read from this tile's canvas instead of a `<video>`.
        var tile: String? = nil
    }

    let width: Int, height: Int, fps: Int, gop: Int, bitrate: Int, lateKeyframe: Int
    let out: URL
    let seconds: Double
    let parallel: Bool
    let only: Set<String>?
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    var processes: [String: ChildProcess] = [:]
    var notes: [String] = []
    /// Set for impaired runs: the sources live across a veth link.
    var lab: NetworkLab?
    /// The wall's sixteen camera streams each get a rendition of this height (libx264); its
    /// tiles, smaller than the source, then play it.
    var wallRendition: Int?
    var wallRenditionLine: String {
        wallRendition.map { "    renditions: [{name: r\($0), height: \($0), bitrate: 400k}]\n" } ?? ""
    }
    /// A stream (`cam_rend`) with a rendition of this height, read through the rendition and
    /// through the source in the same run: what a rendition adds.
    var rendition: Int?
    var sourceHost: String { lab?.sourceAddress ?? "127.0.0.1" }

    init(width: Int, height: Int, fps: Int, gop: Int, bitrate: Int, lateKeyframe: Int = 0, out: String, seconds: Double, parallel: Bool, only: Set<String>?) throws {
        self.width = width; self.height = height; self.fps = fps; self.gop = gop; self.bitrate = bitrate
        self.lateKeyframe = lateKeyframe
        self.out = URL(fileURLWithPath: out, isDirectory: true)
        self.seconds = seconds
        self.parallel = parallel
        self.only = only
        try FileManager.default.createDirectory(at: self.out, withIntermediateDirectories: true)
    }

    var testsrc: String { "testsrc://?size=\(width)x\(height)&fps=\(fps)&gop=\(gop)&bitrate=\(bitrate)" + (lateKeyframe > 0 ? "&late_keyframe=\(lateKeyframe)" : "") }

    static func freePort(udp: Bool = false) -> Int {
        let fd = socket(AF_INET, Int32(udp ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    func start(_ name: String, _ exe: String, _ args: [String], ready: String? = nil, timeout: Double = 20, atSource: Bool = false) throws -> ChildProcess {
        let (e, a) = atSource && lab != nil ? lab!.inSourceNamespace(exe, args) : (exe, args)
        let p = try ChildProcess(name: name, e, a)
        processes[name] = p
        if let ready, !p.waitFor(ready, timeout: timeout) {
            throw BenchError("\(name) did not start: \(p.stderr.suffix(400))")
        }
        return p
    }

    func run() throws {
        FFmpegLog.silence()
        let work = out.appendingPathComponent("work")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer {
            for p in processes.values { p.stop() }
            try? FileManager.default.removeItem(at: work)
        }
        let fm = FileManager.default
        let haveRTSP = fm.fileExists(atPath: "/usr/lib/python3/dist-packages/gi") && fm.fileExists(atPath: scriptPath("rtsp_server.py"))
        let haveNginx = RTMPServer.isInstalled
        guard fm.fileExists(atPath: "/usr/bin/ffmpeg") else { throw BenchError("ffmpeg is not installed: run scripts/setup.sh") }

        var serveStreams = ""
        var serveHeader = ""
        var ingestPort: Int?
        var rtspOut: Int?
        var udpForward: Int?
        /// Where a third UDP forward feeds srt-live-transmit, the SRT peer the SRT reader is read against.
        var srtPeerIn: Int?
        var scenarios: [Scenario] = []
        let servePort = Self.freePort()
        let relay = "http://127.0.0.1:\(servePort)/streams"
        let nobuffer = ["-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "32768", "-analyzeduration", "0"]
        let preview = "preview: { ordering: arrival, freshness: latest, depth: 1, fps: \(fps), quality: 80 }"

        if haveRTSP {
            // The camera: gst-rtsp-server serving the stamped source it receives over UDP.
            let udp = Self.freePort(udp: true), camPort = Self.freePort()
            let mount = "/cam=( udpsrc address=127.0.0.1 port=\(udp) caps=video/mpegts,systemstream=true ! tsdemux latency=0 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=0 )"
            _ = try start("rtsp-camera", "/usr/bin/python3", ["-u", scriptPath("rtsp_server.py"), "--port", String(camPort), "--address", sourceHost, "--mount", mount],
                          ready: "ready", atSource: true)
            _ = try start("camera-source", me, ["publish", "udp://127.0.0.1:\(udp)", "--source", testsrc, "--duration", "100000"], atSource: true)
            let cam = "rtsp://\(sourceHost):\(camPort)/cam"
            // The camera is also forwarded as MPEG-TS over UDP (a wall decoder's feed), unicast and
            // to a multicast group kept on this host (TTL 0, looped back to its members), read back below.
            udpForward = Self.freePort(udp: true)
            srtPeerIn = Self.freePort(udp: true)
            let groupPort = Self.freePort(udp: true)
            let group = "239.255.\(Int.random(in: 1...254)).\(Int.random(in: 1...254)):\(groupPort)"
            serveStreams += "  cam_udp:\n    source: \(cam)\n    transport: udp\n    measure: true\n    \(preview)\n"
                + "    forward: [\"udp://127.0.0.1:\(udpForward!)\", \"udp://\(group)?ttl=0\", \"udp://127.0.0.1:\(srtPeerIn!)\"]\n" + wallRenditionLine
            scenarios.append(Scenario(name: "liverelay-udp-forward", path: "camera → LiveRelay (RTSP/UDP) → MPEG-TS over UDP forward → ffmpeg (nobuffer)",
                                      input: nobuffer + ["-i", "udp://127.0.0.1:\(udpForward!)?timeout=5000000"], relay: "serve", warmup: 3))
            scenarios.append(Scenario(name: "liverelay-multicast-forward", path: "camera → LiveRelay (RTSP/UDP) → MPEG-TS over UDP multicast forward → ffmpeg (nobuffer, a member of the group)",
                                      input: nobuffer + ["-i", "udp://\(group)?timeout=5000000"], relay: "serve", warmup: 3))
            scenarios.append(Scenario(name: "floor-rtsp-udp", path: "camera → ffmpeg (RTSP/UDP, nobuffer)", input: nobuffer + ["-rtsp_transport", "udp", "-i", cam], relay: nil, warmup: 3))
            scenarios.append(Scenario(name: "liverelay-preview-rtsp-udp", path: "camera → LiveRelay (RTSP/UDP) → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/cam_udp/preview.mjpg"], relay: "serve", warmup: 3))
            if lab != nil {
                // Across a lossy link: the same camera with a preview that shows only clean
                // pictures (holding the last one, labelled, until the next clean keyframe).
                serveStreams += "  cam_clean:\n    source: \(cam)\n    transport: udp\n    preview: { ordering: arrival, freshness: clean, fps: \(fps), quality: 80 }\n"
                scenarios.append(Scenario(name: "liverelay-preview-clean-rtsp-udp", path: "camera → LiveRelay (RTSP/UDP), freshness clean → MJPEG → ffmpeg",
                                          input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/cam_clean/preview.mjpg"], relay: "serve", warmup: 3))
            }
            // The re-serve hop: the same camera read back from LiveRelay's own RTSP server.
            rtspOut = Self.freePort()
            serveHeader += "server:\n  rtsp: {listen: \"127.0.0.1:\(rtspOut!)\"}\n"
            scenarios.append(Scenario(name: "liverelay-rtsp-out-udp", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay RTSP server → ffmpeg (RTSP/UDP, nobuffer)",
                                      input: nobuffer + ["-rtsp_transport", "udp", "-i", "rtsp://127.0.0.1:\(rtspOut!)/cam_udp"], relay: "serve", warmup: 3))
            // The same hop with FFmpeg's RTSP demuxer reading the camera (the peer, in the same run).
            serveStreams += "  cam_ffclient:\n    source: \(cam)\n    transport: udp\n    rtsp_client: ffmpeg\n    preview: false\n"
            scenarios.append(Scenario(name: "liverelay-rtsp-out-udp-ffmpeg-client", path: "camera → LiveRelay with FFmpeg's RTSP client (RTSP/UDP) → LiveRelay RTSP server → ffmpeg (RTSP/UDP, nobuffer)",
                                      input: nobuffer + ["-rtsp_transport", "udp", "-i", "rtsp://127.0.0.1:\(rtspOut!)/cam_ffclient"], relay: "serve", warmup: 3))
            if let h = rendition {
                // The same camera with LL-HLS and one rendition, read both ways through the same
                // RTSP server: the difference is what decoding, scaling and encoding add.
                serveStreams += "  cam_rend:\n    source: \(cam)\n    transport: udp\n    preview: false\n"
                    + "    hls: { variant: lowLatency, segment_duration: \(Double(gop) / Double(fps))s, part_duration: 200ms }\n"
                    + "    renditions: [{name: r\(h), height: \(h), bitrate: 400k}]\n"
                notes.append("cam_rend has a \(h)-line rendition (libx264 veryfast, zerolatency, 400 kbit/s), encoded only while read.")
                scenarios += [
                    Scenario(name: "liverelay-rendition-source-rtsp", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay RTSP server, the source → ffmpeg (RTSP/TCP, nobuffer)",
                             input: nobuffer + ["-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtspOut!)/cam_rend"], relay: "serve", warmup: 3),
                    Scenario(name: "liverelay-rendition-rtsp", path: "camera → LiveRelay (RTSP/UDP), decode, scale, encode \(h) lines → LiveRelay RTSP server → ffmpeg (RTSP/TCP, nobuffer)",
                             input: nobuffer + ["-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtspOut!)/cam_rend_r\(h)"], relay: "serve", warmup: 4),
                ]
            }
            if !parallel {
                scenarios.append(Scenario(name: "liverelay-rtsp-out-tcp", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay RTSP server → ffmpeg (RTSP/TCP, nobuffer)",
                                          input: nobuffer + ["-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtspOut!)/cam_udp"], relay: "serve", warmup: 3))
            }
            // The ops wall: sixteen camera tiles in one page (the stamped one and fifteen more
            // sessions of the same camera), H.264 over one WebSocket to WebCodecs; the stamped
            // tile's canvas is read.
            if fm.fileExists(atPath: "/usr/bin/chromium") {
                for i in 1...15 { serveStreams += "  wall\(String(format: "%02d", i)):\n    source: \(cam)\n    transport: udp\n    preview: {fps: 10, size: 320x180}\n" + wallRenditionLine }
                if let h = wallRendition { notes.append("The wall's 16 camera streams each have a \(h)-line rendition (libx264, 400 kbit/s): their tiles play it.") }
                scenarios.append(Scenario(name: "liverelay-wall-webcodecs-rtsp-udp", path: "camera → LiveRelay (RTSP/UDP) → WebSocket, H.264 → WebCodecs canvas (16-tile wall, Chromium)",
                                          input: [], relay: "serve", warmup: 6, page: "http://127.0.0.1:\(servePort)/?measure=cam_udp", tile: "cam_udp"))
                if !parallel {
                    scenarios.append(Scenario(name: "liverelay-wall-jpeg-rtsp-udp", path: "camera → LiveRelay (RTSP/UDP) → WebSocket, JPEG → canvas (16-tile wall, Chromium)",
                                              input: [], relay: "serve", warmup: 6, page: "http://127.0.0.1:\(servePort)/?jpeg&measure=cam_udp", tile: "cam_udp"))
                    scenarios.append(Scenario(name: "liverelay-wall-webcodecs-1-tile", path: "camera → LiveRelay (RTSP/UDP) → WebSocket, H.264 → WebCodecs canvas (the one tile alone)",
                                              input: [], relay: "serve", warmup: 6, page: "http://127.0.0.1:\(servePort)/?only=cam_udp&measure=cam_udp", tile: "cam_udp"))
                }
            }
            if !parallel {
                serveStreams += "  cam_tcp:\n    source: \(cam)\n    transport: tcp\n    measure: true\n    \(preview)\n"
                scenarios.append(Scenario(name: "floor-rtsp-tcp", path: "camera → ffmpeg (RTSP/TCP, nobuffer)", input: nobuffer + ["-rtsp_transport", "tcp", "-i", cam], relay: nil, warmup: 3))
                scenarios.append(Scenario(name: "liverelay-preview-rtsp-tcp", path: "camera → LiveRelay (RTSP/TCP) → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/cam_tcp/preview.mjpg"], relay: "serve", warmup: 3))
            }
        } else {
            notes.append("RTSP scenarios skipped: gst-rtsp-server (python3-gi, gir1.2-gst-rtsp-server-1.0) is not installed.")
        }
        if haveNginx {
            let page = work.appendingPathComponent("page")
            try fm.createDirectory(at: page, withIntermediateDirectories: true)
            let hlsDir = page.appendingPathComponent("nginx-hls")
            // In the source's namespace (across the impaired link) it listens on every address.
            let rtmpPort = try RTMPServer(work: work, loopbackOnly: lab == nil,
                                          application: "hls on; hls_path \(hlsDir.path); hls_fragment 1s; hls_playlist_length 4s;",
                                          launch: { try start($0, $1, $2, atSource: true) }).port
            let src = "rtmp://\(sourceHost):\(rtmpPort)/live/src"
            _ = try start("rtmp-source", me, ["publish", "rtmp://127.0.0.1:\(rtmpPort)/live/src", "--source", testsrc, "--duration", "100000"], atSource: true)
            usleep(1_500_000)
            _ = try start("ffmpeg-hop", "/usr/bin/ffmpeg", ["-v", "error"] + nobuffer + ["-i", src, "-c", "copy", "-f", "flv", "rtmp://\(sourceHost):\(rtmpPort)/live/hop"])
            let ffhls = page.appendingPathComponent("ffmpeg-hls")
            try fm.createDirectory(at: ffhls, withIntermediateDirectories: true)
            _ = try start("ffmpeg-hls", "/usr/bin/ffmpeg", ["-v", "error"] + nobuffer + ["-i", src, "-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_list_size", "5",
                                                                                        "-hls_flags", "delete_segments", ffhls.appendingPathComponent("index.m3u8").path])
            serveStreams += "  rtmp:\n    source: \(src)\n    measure: true\n    \(preview)\n    hls: { variant: lowLatency, segment_duration: 1s, part_duration: 200ms }\n"
            // The same with 100 ms parts played three parts behind the edge (the least RFC 8216bis
            // recommends).
            serveStreams += "  rtmp_ll100:\n    source: \(src)\n    preview: false\n    hls: { variant: lowLatency, segment_duration: 1s, part_duration: 100ms, part_hold_back: 3 }\n"
            // And 200 ms parts played two parts behind (the least RFC 8216bis allows).
            serveStreams += "  rtmp_hb2:\n    source: \(src)\n    preview: false\n    hls: { variant: lowLatency, segment_duration: 1s, part_duration: 200ms, part_hold_back: 2 }\n"
            // The same stamped source pushed into LiveRelay's own one-port RTMP ingest instead:
            // publish → preview, and publish → LiveRelay's RTSP server → ffmpeg.
            ingestPort = Self.freePort()
            serveHeader += "ingest:\n  rtmp: {listen: \"127.0.0.1:\(ingestPort!)\"}\n"
            serveStreams += "  pushed:\n    source: publish\n    measure: true\n    \(preview)\n"
            scenarios.append(Scenario(name: "liverelay-ingest-preview", path: "publisher → LiveRelay one-port RTMP ingest → MJPEG → ffmpeg",
                                      input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/pushed/preview.mjpg"], relay: "serve", warmup: 3))
            if let rtspOut {
                scenarios.append(Scenario(name: "liverelay-ingest-rtsp-out-tcp", path: "publisher → LiveRelay one-port RTMP ingest → LiveRelay RTSP server → ffmpeg (RTSP/TCP, nobuffer)",
                                          input: nobuffer + ["-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtspOut)/pushed"], relay: "serve", warmup: 3))
            }
            serveStreams += "  rtmp_ts:\n    source: \(src)\n    preview: false\n    hls: { variant: mpegts, segment_duration: 1s }\n"
            let hlsClient = ["-live_start_index", "-1"]
            // Segment availability, seen from outside the same way for the three servers.
            let listed = "capture of a segment's last picture → segment listed (playlist polled every 5 ms)"
            scenarios += [
                Scenario(name: "liverelay-hls-mpegts-1s-listed", path: "LiveRelay HLS MPEG-TS 1 s: \(listed)", input: [], relay: "serve", warmup: 3,
                         playlist: "\(relay)/rtmp_ts/hls/index.m3u8"),
                Scenario(name: "ffmpeg-hls-1s-listed", path: "ffmpeg hls muxer 1 s: \(listed)", input: [], relay: "ffmpeg-hls", warmup: 3,
                         playlist: ffhls.appendingPathComponent("index.m3u8").path),
                Scenario(name: "nginx-rtmp-hls-1s-listed", path: "nginx-rtmp HLS 1 s fragments: \(listed)", input: [], relay: "nginx", warmup: 3,
                         playlist: hlsDir.appendingPathComponent("src.m3u8").path),
            ]
            scenarios += [
                Scenario(name: "floor-rtmp", path: "nginx-rtmp → ffmpeg (RTMP, nobuffer)", input: nobuffer + ["-i", src], relay: nil, warmup: 3),
                Scenario(name: "liverelay-preview-rtmp", path: "nginx-rtmp → LiveRelay → MJPEG → ffmpeg", input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/rtmp/preview.mjpg"], relay: "serve", warmup: 3),
                Scenario(name: "ffmpeg-copy-hop-rtmp", path: "nginx-rtmp → ffmpeg -c copy → nginx-rtmp → ffmpeg", input: nobuffer + ["-i", "rtmp://\(sourceHost):\(rtmpPort)/live/hop"], relay: "ffmpeg-hop", warmup: 3),
                Scenario(name: "liverelay-hls-lowlatency", path: "LiveRelay LL-HLS (1 s / 200 ms parts), ffmpeg HLS client (plays whole segments)", input: hlsClient + ["-i", "\(relay)/rtmp/hls/index.m3u8"], relay: "serve", warmup: 5),
                Scenario(name: "liverelay-hls-mpegts-1s", path: "LiveRelay HLS MPEG-TS 1 s, ffmpeg HLS client", input: hlsClient + ["-i", "\(relay)/rtmp_ts/hls/index.m3u8"], relay: "serve", warmup: 5),
                Scenario(name: "ffmpeg-hls-1s", path: "ffmpeg hls muxer 1 s, ffmpeg HLS client", input: hlsClient + ["-i", ffhls.appendingPathComponent("index.m3u8").path], relay: "ffmpeg-hls", warmup: 5),
                Scenario(name: "nginx-rtmp-hls-1s", path: "nginx-rtmp HLS 1 s fragments, ffmpeg HLS client", input: hlsClient + ["-i", hlsDir.appendingPathComponent("src.m3u8").path], relay: "nginx", warmup: 5),
            ]
            // A real LL-HLS client: hls.js in low-latency mode, in headless Chromium, reading the
            // stamp of every frame it presents. The peers' playlists are served next to the page.
            if fm.fileExists(atPath: "/usr/bin/chromium"), let why = installHLSJS(into: page) {
                notes.append("Browser scenarios skipped: \(why)")
            } else if fm.fileExists(atPath: "/usr/bin/chromium") {
                let pagePort = Self.freePort()
                _ = try start("page-server", "/usr/bin/python3", ["-m", "http.server", String(pagePort), "--bind", "127.0.0.1", "--directory", page.path])
                let pages = "http://127.0.0.1:\(pagePort)"
                // Every hls.js player kept at the live edge by LiveRelay's own script, peers' too.
                func hlsjs(_ src: String) -> String { "\(pages)/hlsjs.html?src=\(src)&edge=http://127.0.0.1:\(servePort)" }
                func native(_ src: String) -> String { "\(pages)/native.html?src=\(src)" }
                scenarios.append(Scenario(name: "liverelay-hls-lowlatency-hlsjs", path: "LiveRelay LL-HLS (1 s / 200 ms parts), hls.js low-latency mode in Chromium",
                                          input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp/hls/index.m3u8")))
                scenarios.append(Scenario(name: "liverelay-hls-ll100-hlsjs", path: "LiveRelay LL-HLS (1 s / 100 ms parts, PART-HOLD-BACK 3 parts), hls.js low-latency mode in Chromium",
                                          input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp_ll100/hls/index.m3u8")))
                scenarios.append(Scenario(name: "liverelay-hls-hb2-hlsjs", path: "LiveRelay LL-HLS (1 s / 200 ms parts, PART-HOLD-BACK 2 parts), hls.js low-latency mode in Chromium",
                                          input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp_hb2/hls/index.m3u8")))
                if let h = rendition, haveRTSP {
                    scenarios += [
                        Scenario(name: "liverelay-rendition-source-hlsjs", path: "camera → LiveRelay LL-HLS, the source, hls.js low-latency mode in Chromium",
                                 input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/cam_rend/hls/index.m3u8")),
                        Scenario(name: "liverelay-rendition-hlsjs", path: "camera → LiveRelay LL-HLS, the \(h)-line rendition, hls.js low-latency mode in Chromium",
                                 input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/cam_rend_r\(h)/hls/index.m3u8")),
                    ]
                }
                if !parallel {
                    scenarios += [
                        Scenario(name: "liverelay-hls-mpegts-1s-hlsjs", path: "LiveRelay HLS MPEG-TS 1 s, hls.js in Chromium", input: [], relay: "serve", warmup: 6, page: hlsjs("\(relay)/rtmp_ts/hls/index.m3u8")),
                        Scenario(name: "ffmpeg-hls-1s-hlsjs", path: "ffmpeg hls muxer 1 s, hls.js in Chromium", input: [], relay: "ffmpeg-hls", warmup: 6, page: hlsjs("\(pages)/ffmpeg-hls/index.m3u8")),
                        Scenario(name: "nginx-rtmp-hls-1s-hlsjs", path: "nginx-rtmp HLS 1 s fragments, hls.js in Chromium", input: [], relay: "nginx", warmup: 6, page: hlsjs("\(pages)/nginx-hls/src.m3u8")),
                        // Chromium's own HLS player (a <video src=playlist>), on the same three.
                        Scenario(name: "liverelay-hls-mpegts-1s-native", path: "LiveRelay HLS MPEG-TS 1 s, Chromium's native player", input: [], relay: "serve", warmup: 6, page: native("\(relay)/rtmp_ts/hls/index.m3u8")),
                        Scenario(name: "ffmpeg-hls-1s-native", path: "ffmpeg hls muxer 1 s, Chromium's native player", input: [], relay: "ffmpeg-hls", warmup: 6, page: native("\(pages)/ffmpeg-hls/index.m3u8")),
                        Scenario(name: "nginx-rtmp-hls-1s-native", path: "nginx-rtmp HLS 1 s fragments, Chromium's native player", input: [], relay: "nginx", warmup: 6, page: native("\(pages)/nginx-hls/src.m3u8")),
                    ]
                }
            } else {
                notes.append("Browser scenarios skipped: chromium is not installed (scripts/setup.sh installs it).")
            }
        } else {
            notes.append("RTMP and HLS peer scenarios skipped: nginx with libnginx-mod-rtmp is not installed.")
        }
        // SRT: the same stamped source pushed into LiveRelay's one-port SRT ingest (the caller
        // asks for 20 ms of SRT latency, as the listener does), next to ffmpeg reading the same
        // push directly (the publisher listens, ffmpeg calls).
        let srtIngestPort = Self.freePort(udp: true), srtFloorPort = Self.freePort(udp: true), srtPeerPort = Self.freePort(udp: true)
        let srtLatency = "latency=20000"
        serveHeader += ingestPort == nil ? "ingest:\n" : ""
        serveHeader += "  srt: {listen: \"127.0.0.1:\(srtIngestPort)\"}\n"
        serveStreams += "  pushed_srt:\n    source: publish\n    measure: true\n    \(preview)\n"
        scenarios.append(Scenario(name: "floor-srt", path: "publisher (SRT listener) → ffmpeg (SRT caller, nobuffer)",
                                  input: nobuffer + ["-i", "srt://127.0.0.1:\(srtFloorPort)?mode=caller&\(srtLatency)"], relay: nil, warmup: 3))
        scenarios.append(Scenario(name: "liverelay-srt-ingest-preview", path: "publisher → LiveRelay one-port SRT ingest → MJPEG → ffmpeg",
                                  input: nobuffer + ["-f", "mpjpeg", "-i", "\(relay)/pushed_srt/preview.mjpg"], relay: "serve", warmup: 3))
        if haveRTSP {
            // The camera read from LiveRelay over SRT (another ops centre's pull), next to RTSP out.
            // Three times: with SRT's 20 ms buffer, as the publishing rows ask, with 5 ms and with
            // none (a reader on a clean link asks for what it needs; this side asks nothing of it).
            scenarios.append(Scenario(name: "liverelay-srt-read", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay SRT reader → ffmpeg (SRT caller, latency 20 ms, nobuffer)",
                                      input: nobuffer + ["-i", "srt://127.0.0.1:\(srtIngestPort)?streamid=read:cam_udp&\(srtLatency)"], relay: "serve", warmup: 3))
            scenarios.append(Scenario(name: "liverelay-srt-read-5ms", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay SRT reader → ffmpeg (SRT caller, latency 5 ms, nobuffer)",
                                      input: nobuffer + ["-i", "srt://127.0.0.1:\(srtIngestPort)?streamid=read:cam_udp&latency=5000"], relay: "serve", warmup: 3))
            scenarios.append(Scenario(name: "liverelay-srt-read-0ms", path: "camera → LiveRelay (RTSP/UDP) → LiveRelay SRT reader → ffmpeg (SRT caller, latency 0, nobuffer)",
                                      input: nobuffer + ["-i", "srt://127.0.0.1:\(srtIngestPort)?streamid=read:cam_udp&latency=0"], relay: "serve", warmup: 3))
            // The peer: libsrt's own tool serving the same MPEG-TS (the UDP forward's) over SRT.
            scenarios.append(Scenario(name: "peer-srt-live-transmit-read", path: "camera → LiveRelay (RTSP/UDP) → MPEG-TS over UDP → srt-live-transmit (SRT listener) → ffmpeg (SRT caller, latency 0, nobuffer)",
                                      input: nobuffer + ["-i", "srt://127.0.0.1:\(srtPeerPort)?latency=0"], relay: "serve", warmup: 3))
        }
        if let only { scenarios = scenarios.filter { only.contains($0.name) } }
        guard !scenarios.isEmpty else { throw BenchError("no scenario to run") }

        let config = work.appendingPathComponent("serve.yaml")
        try "\(serveHeader)streams:\n\(serveStreams)".write(to: config, atomically: true, encoding: .utf8)
        _ = try start("serve", me, ["serve", "--config", config.path, "--listen", "127.0.0.1:\(servePort)"], ready: "listening on")
        if let ingestPort {
            _ = try start("ingest-source", me, ["publish", "rtmp://127.0.0.1:\(ingestPort)/live/pushed", "--source", testsrc, "--duration", "100000"])
        }
        if scenarios.contains(where: { $0.name == "liverelay-srt-ingest-preview" }) {
            _ = try start("srt-ingest-source", me, ["publish", "srt://127.0.0.1:\(srtIngestPort)?streamid=pushed_srt&\(srtLatency)", "--format", "mpegts",
                                                   "--source", testsrc, "--duration", "100000"])
        }
        if scenarios.contains(where: { $0.name == "peer-srt-live-transmit-read" }), let srtPeerIn {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/srt-live-transmit") else {
                throw BenchError("peer-srt-live-transmit-read needs srt-live-transmit (apt install srt-tools)")
            }
            _ = try start("srt-live-transmit", "/usr/bin/srt-live-transmit", ["-q", "-a:no", "udp://127.0.0.1:\(srtPeerIn)", "srt://127.0.0.1:\(srtPeerPort)?mode=listener&latency=0"])
        }
        if scenarios.contains(where: { $0.name == "floor-srt" }) {
            _ = try start("srt-floor-source", me, ["publish", "srt://127.0.0.1:\(srtFloorPort)?mode=listener&\(srtLatency)", "--format", "mpegts",
                                                  "--source", testsrc, "--duration", "100000", "--timeout", "100000"])
        }
        print("bench: \(scenarios.count) scenarios, \(Int(seconds)) s each\(parallel ? ", side by side" : ""); \(width)x\(height) at \(fps) fps, GOP \(gop)")
        Thread.sleep(forTimeInterval: 3) // sources live, first HLS segments cut

        var results: [ScenarioResult] = []
        var groups: [[Scenario]] = scenarios.map { [$0] }
        if parallel {
            // Side by side, in groups that fit what the machine has left with the sources and
            // the relay running (less a third of a core for their peaks).
            let idle = LatencyGroups.headroom()
            let budget = max(0.5, idle - 0.3)
            groups = LatencyGroups.plan(scenarios, budget: budget)
            let listed = groups.enumerated().map { i, g in "\(i + 1)) " + g.map(\.name).joined(separator: ", ") }.joined(separator: "; ")
            notes.append(String(format: "Headroom before measuring: %.2f of %d cores idle; %d groups of at most %.2f cores each (estimated per scenario), run one after another: ",
                                idle, ProcessInfo.processInfo.activeProcessorCount, groups.count, budget) + listed + ".")
            print("bench: \(groups.count) groups within \(String(format: "%.2f", budget)) of \(String(format: "%.2f", idle)) idle cores")
        }
        for group in groups {
            results += try measure(group, servePort: servePort)
        }
        if let h = rendition, haveRTSP,
           let info = ChildProcess.decode(StreamView.self, from: "http://127.0.0.1:\(servePort)/api/streams/cam_rend_r\(h)")?.rendition {
            notes.append("cam_rend_r\(h): the encoder's own time (scale and encode) was \(info.encodeMilliseconds.map { "\($0)" } ?? "–") ms per picture over its last 30, \(info.framesEncoded) pictures encoded.")
        }
        results += inProcessRows(servePort: servePort, previews: (haveRTSP ? ["cam_udp"] : []) + (haveNginx ? ["rtmp", "pushed"] : []) + ["pushed_srt"], hls: haveNginx ? ["rtmp", "rtmp_ts"] : [])
        try write(results)
    }

    /// hls.js is not packaged by Debian: the PyPI gradio wheel carries it as one ES module (see
    /// ../shared/TESTING-RECIPES.md). Cached in /tmp; nil on success, else why not.
    func installHLSJS(into page: URL) -> String? {
        // scripts/hlsjs_page.py: hls.js from the gradio wheel (cached) and the LL player page.
        guard let r = try? ChildProcess.run("/usr/bin/python3", [scriptPath("hlsjs_page.py"), page.path]) else { return "python3 is not installed" }
        guard r.status == 0 else {
            let why = r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)"
            return "hls.js could not be installed: \(why)"
        }
        return nil
    }

    func scriptPath(_ name: String) -> String { Self.scriptsDirectory(near: me) + "/" + name }

    /// The scripts directory next to the package the binary was built in, or the working directory's.
    static func scriptsDirectory(near executable: String) -> String {
        var dir = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = dir.appendingPathComponent("scripts/rtsp_server.py")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate.deletingLastPathComponent().path }
            dir.deleteLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/scripts"
    }
}
