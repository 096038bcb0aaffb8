import Testing
import Foundation
import TestSupport
import Bench
import RelayAPI
import Wire

/// H.265 end to end with independent clients: a gst-rtsp-server camera (x265enc, rtph265pay), a
/// GStreamer WHIP publisher and an ffmpeg SRT publisher (MPEG-TS) go in; ffmpeg, GStreamer and
/// VLC read RTSP out, ffmpeg and VLC read LL-HLS (fMP4 `hvc1`, its CODECS string), a recording
/// is exported as MP4, an SRT reader and a GStreamer WHEP player (H.265 offered) take it too.
/// The camera's slices come out of RTSP out unchanged: the same NAL units ffmpeg reads from the
/// camera directly at the same time.
@Suite(.ownThreads, .serialized) struct H265Tests {
    static let camera = "/hevc=( videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 ! x265enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=800 ! rtph265pay name=pay0 pt=96 config-interval=-1 )"

    /// The coded slices (VCL NAL units, trailing zeros dropped) of an H.265 Annex B file.
    static func slices(_ path: String) -> [[UInt8]] {
        guard let d = FileManager.default.contents(atPath: path) else { return [] }
        let b = [UInt8](d)
        return H264.annexBRanges(b).compactMap { r in
            guard let h = b[r].first, H265.isSlice(H265.type(h)) else { return nil }
            return Array(b[r].reversed().drop { $0 == 0 }.reversed())
        }
    }

    static func probe(_ args: [String]) throws -> String {
        try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error"] + args, timeout: 30).output
    }

    @Test(.tags(.exclusive)) func everyPathCarriesH265Unchanged() throws {
        let camera = try Servers.RTSP(mounts: [Self.camera])
        let home = Paths.tempDirectory("h265")
        let (serve, port, dir, rtsp) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        ingest:
          srt: {listen: "127.0.0.1:0"}
        streams:
          cam:
            source: \(camera.url("/hevc"))
            # TCP: the slices are compared with the camera's, byte for byte.
            transport: tcp
            preview: false
            hls: {variant: lowLatency}
            record: {path: "\(home.path)/recordings", segment_duration: 2s}
          phone: {source: publish, preview: false}
          field: {source: publish, preview: false}
        """, dir: home, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let srt = try #require(serve.listeningPort("SRT ingest listening on", timeout: 10))
        let base = "http://127.0.0.1:\(port)"
        let began = Date()
        // Live: RTSP out answers with the camera's codec.
        var described = ""
        for _ in 0..<40 where !described.contains("hevc") {
            described = try Self.probe(["-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,profile,width,height", "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/cam"])
            if !described.contains("hevc") { usleep(250_000) }
        }
        #expect(described.contains("hevc,Main,640,360"), "\(described) \(serve.stderr.suffix(800))")

        // Side by side: the publishers, and every reader.
        let whip = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/whip_gst.py").path, "\(base)/streams/phone/whip",
                                                 "--codec", "h265", "--size", "320x180", "--seconds", "14"])
        defer { whip.stop() }
        let srtPublisher = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-re", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-t", "14", "-pix_fmt", "yuv420p",
                                                            "-c:v", "libx265", "-preset", "ultrafast", "-tune", "zerolatency", "-x265-params", "keyint=25:log-level=error",
                                                            "-f", "mpegts", "srt://127.0.0.1:\(srt)?pkt_size=1316&streamid=publish:field"])
        defer { srtPublisher.stop() }
        let direct = dir.appendingPathComponent("direct.hevc").path, relayed = dir.appendingPathComponent("relayed.hevc").path
        // The direct read starts first and ends last: every relayed picture falls within it.
        let readDirect = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", camera.url("/hevc"), "-t", "8", "-c", "copy", "-f", "hevc", direct])
        // Two seconds ahead: RTSP out starts a reader at the last keyframe (up to a GOP, 1 s,
        // old), and ffmpeg's own RTSP setup takes a moment, so the direct read must already have
        // that keyframe's slices (0.3 s ahead missed about 30 of them in two full runs).
        usleep(2_000_000)
        let readRelayed = try ChildProcess("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtsp)/cam", "-t", "4", "-c", "copy", "-f", "hevc", relayed])
        let gst = try ChildProcess("/usr/bin/timeout", ["-k", "1", "25", "/usr/bin/gst-launch-1.0", "-q", "rtspsrc", "location=rtsp://127.0.0.1:\(rtsp)/cam", "protocols=udp",
                                                    "!", "rtph265depay", "!", "h265parse", "!", "avdec_h265", "!", "fakesink", "num-buffers=60"])
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(dir.path, 0o755)
        func vlc(_ url: String, _ name: String) throws -> (ChildProcess, String) {
            let file = vlcDir.appendingPathComponent("\(name).ts").path
            return (try ChildProcess("/usr/bin/timeout", ["-k", "1", "30", "/usr/sbin/runuser", "-u", "nobody", "--", "/usr/bin/cvlc", "-q", "--play-and-exit",
                                                      "--run-time=4", url, "--sout", "#std{access=file,mux=ts,dst=\(file)}"]), file)
        }
        let srtRead = dir.appendingPathComponent("srt.ts").path
        let srtReader = try ChildProcess("/usr/bin/timeout", ["-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error", "-i", "srt://127.0.0.1:\(srt)?streamid=read:cam",
                                                          "-t", "3", "-c", "copy", "-f", "mpegts", srtRead])
        let whep = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/whep_gst.py").path, "\(base)/streams/cam/whep", "--codec", "h265", "--seconds", "6"])

        // Unchanged: every slice ffmpeg read through LiveRelay is one it read from the camera.
        #expect(readDirect.wait(timeout: 30) && readRelayed.wait(timeout: 30))
        let a = Self.slices(direct), b = Self.slices(relayed)
        let common = Set(a).intersection(b).count
        #expect(b.count >= 90 && common >= b.count - 2, "\(common) of \(b.count) relayed slices are the camera's (\(a.count) read directly)")
        // The publishers are live in H.265 too, read back through RTSP out.
        for (name, size) in [("phone", "320,180"), ("field", "320,180")] {
            let got = try Self.probe(["-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,profile,width,height", "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/\(name)"])
            #expect(got.contains("hevc,Main,\(size)"), "\(name): \(got) \(name == "phone" ? whip.stdout.suffix(300) : srtPublisher.stderr.suffix(300))")
        }

        #expect(gst.wait(timeout: 30) && gst.exitStatus == 0, "GStreamer rtspsrc: \(gst.stderr.suffix(400))")
        #expect(srtReader.wait(timeout: 25))
        #expect(try Self.probe(["-show_entries", "stream=codec_name", "-of", "csv=p=0", srtRead]).contains("hevc"), "SRT reader")
        #expect(whep.wait(timeout: 30))
        let played = try? Servers.decode(WebRTCTests.GstResult.self, String(whep.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""))
        #expect(played?.codec == "video/x-h265" && (played?.frames ?? 0) >= 60 && played?.width == 640, "WHEP: \(whep.stdout.suffix(300)) \(whep.stderr.suffix(300))")

        // VLC, as a user runs it (as nobody: it refuses root), once the publishers are gone.
        srtPublisher.stop()
        whip.stop()
        let vlcRTSP = try vlc("rtsp://127.0.0.1:\(rtsp)/cam", "rtsp"), vlcHLS = try vlc("\(base)/streams/cam/hls/index.m3u8", "hls")
        for (p, file) in [vlcRTSP, vlcHLS] {
            #expect(p.wait(timeout: 40))
            let got = try Self.probe(["-count_packets", "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", file])
            #expect(got.contains("hevc,") && (Int(got.split(separator: ",").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0) >= 30, "VLC \(file): \(got) \(p.stdout.suffix(300)) \(p.stderr.suffix(300))")
        }

        // LL-HLS: fMP4 tagged hvc1, the CODECS string of the camera's SPS; ffmpeg decodes it.
        let master = try ChildProcess.run("/usr/bin/curl", ["-s", "\(base)/streams/cam/hls/master.m3u8"], timeout: 10).stdout
        #expect(master.contains("CODECS=\"hvc1.1.6.L63.90\""), "\(master)")
        let initFile = dir.appendingPathComponent("init.mp4").path
        _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", initFile, "\(base)/streams/cam/hls/init0.mp4"], timeout: 10)
        #expect(try Self.probe(["-show_entries", "stream=codec_tag_string", "-of", "csv=p=0", initFile]).contains("hvc1"))
        let hls = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", "\(base)/streams/cam/hls/index.m3u8", "-frames:v", "30", "-f", "null", "-"], timeout: 30)
        #expect(hls.status == 0, "\(hls.stderr.suffix(300))")

        // The recording, exported: MP4 with hvc1, every picture decodable.
        let iso = ISO8601DateFormatter()
        let clip = dir.appendingPathComponent("clip.mp4").path
        let start = max(began.addingTimeInterval(2), Date().addingTimeInterval(-8))
        var exported = ""
        for _ in 0..<20 where !exported.contains("hevc") {
            _ = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", clip, "\(base)/streams/cam/recording.mp4?start=\(iso.string(from: start))&duration=3"], timeout: 20)
            exported = try Self.probe(["-count_frames", "-show_entries", "stream=codec_name,codec_tag_string,nb_read_frames", "-of", "csv=p=0", clip])
            if !exported.contains("hevc") { usleep(500_000) }
        }
        let frames = Int(exported.split(separator: ",").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(exported.hasPrefix("hevc,hvc1,") && frames >= 80, "export: \(exported)")
    }
}
