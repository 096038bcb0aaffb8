import Foundation
import Testing
import TestSupport
import Bench
import Relay
import RelayAPI

/// WebRTC out (WHEP): Chromium plays a stream on its public page over WebRTC (ICE-lite on one
/// UDP port, DTLS-SRTP from OpenSSL and libsrtp2, H.264 passed through), the stamps read back
/// from the pictures it shows; credentials are checked before any ICE or DTLS work; hostile
/// offers and datagrams leave the server serving.
@Suite(.ownThreads, .serialized) struct WebRTCTests {
    /// What the server at `port` answers at `path`, as a `T`; nil when nothing (or not a `T`) answers.
    static func api<T: Decodable>(_ type: T.Type, _ port: Int, _ path: String, _ extra: [String] = []) -> T? {
        Servers.apiIfAny(type, "http://127.0.0.1:\(port)\(path)", extra, maxTime: 2)
    }

    /// `cam`'s outputs that are WebRTC viewers.
    static func webrtcSinks(_ port: Int, _ extra: [String] = []) -> [OutputStatus] {
        (api(StreamView.self, port, "/api/streams/cam", extra)?.sinks ?? []).filter { $0.name.hasPrefix("webrtc-") }
    }

    /// scripts/whep_gst.py's JSON line: the fields these tests read.
    struct GstResult: Decodable {
        var state: String?
        /// The video's RTP caps (`video/x-h264`, `video/x-h265`).
        var codec: String?
        var frames: Int?
        var width: Int?
        var height: Int?
        var audioRate: Int?
        var audioChannels: Int?
        var audioSamples: Int?
        var audioPeak: Int?
        var error: String?
    }

    @Test(.tags(.exclusive)) func chromiumPlaysOverWHEPAndTheStampsComeBack() throws {
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30", preview: false}
        """, arguments: ["--verbose"])
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(1_500_000)
        let csv = dir.appendingPathComponent("stamps.csv").path
        let browser = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                         "http://127.0.0.1:\(port)/streams/cam/watch", "--stamps", "video",
                                                         "--csv", csv, "--seconds", "6", "--timeout", "30", "--rtc-stats"])
        // While it plays, the viewer is an output of the stream like any other.
        var seen: [OutputStatus] = []
        let until = Date().addingTimeInterval(15)
        while Date() < until, seen.isEmpty {
            seen = Self.webrtcSinks(port)
            usleep(250_000)
        }
        _ = browser.wait(timeout: 60)
        let line = browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try #require(try? BrowserReport.decode(line), "\(browser.stdout) \(browser.stderr.suffix(400))")
        print("WebRTCTests: Chromium over WHEP: \(j)")
        #expect(j.player == "webrtc", "\(j) \(serve.stdout.suffix(600))")
        #expect((j.stamps ?? 0) >= 120, "\(j)")
        let rows = RecordingPlaybackTests.stampRows(csv)
        #expect(zip(rows, rows.dropFirst()).allSatisfy { $0.0 < $1.0 }, "stamps out of order")
        // Sub-second, glass to glass on this machine (the bench compares it with the wall's tile).
        #expect((j.p50 ?? .greatestFiniteMagnitude) < 500, "\(j)")
        #expect(seen.first?.kind == .webrtc, "\(seen)")
        #expect(serve.stdout.contains("WebRTC (WHEP) on udp://127.0.0.1:"), "\(serve.stdout.prefix(600))")
        // Chromium offers AES-GCM for SRTP, which LiveRelay prefers (a quarter of the cost).
        let log = serve.stdout + serve.stderr
        #expect(log.contains("webrtc: viewer connected") && log.contains("srtp=AEAD_AES_128_GCM"), "\(log.suffix(800))")
        // Sender reports, about one a second, put a picture's capture time on the NTP clock:
        // when Chromium's stats are read, the last one is at most a report interval (and the
        // path) old, and never from the future.
        let rtc = j.rtc ?? BrowserReport.RTC()
        #expect((rtc.reportsSent ?? 0) >= 4, "\(rtc)")
        if let reported = rtc.remoteTimestamp, let readAt = rtc.readAt {
            let age = readAt - reported
            print("WebRTCTests: the last sender report's capture time was \(Int(age)) ms old when read")
            #expect(age > 0 && age < 1_600, "\(rtc)")
        } else {
            Issue.record("no sender report's time in Chromium's stats: \(rtc)")
        }
    }

    /// A phone's browser becomes a camera: Chromium's fake camera and microphone on the publish
    /// page go out by WHIP, and the stream is a source like any other: ffmpeg reads H.264 and
    /// Opus from LiveRelay's RTSP output and pictures from its HLS.
    @Test(.tags(.exclusive)) func chromiumPublishesOverWHIPAndFFmpegReadsItFromRTSPAndHLS() throws {
        let (serve, port, dir, rtsp) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        streams:
          phone: {source: publish, preview: false, hls: {variant: mpegts, segment_duration: 1s}}
        """, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let publisher = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                           "http://127.0.0.1:\(port)/streams/phone/publish?auto", "--fake-camera",
                                                           "--wait-text", "#state=connected", "--seconds", "20", "--hold", "16", "--timeout", "30"])
        defer { publisher.stop() }
        try #require(publisher.waitFor("holding", timeout: 45), "\(publisher.stdout.suffix(300)) \(publisher.stderr.suffix(300)) \(serve.stdout.suffix(600))")
        #expect(publisher.stdout.contains("watching"))
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,width,height",
                                                             "-of", "csv=p=0", "rtsp://127.0.0.1:\(rtsp)/phone"], timeout: 30)
        let lines = Set(probe.stdout.split(separator: "\n").map(String.init))
        #expect(lines.contains { $0.hasPrefix("h264,") } && lines.contains("opus"), "\(probe.output)")
        let read = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtsp)/phone",
                                                           "-frames:v", "30", "-f", "null", "-"], timeout: 30)
        #expect(read.status == 0, "\(read.stderr.suffix(400))")
        let hls = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", "http://127.0.0.1:\(port)/streams/phone/hls/index.m3u8",
                                                          "-frames:v", "20", "-f", "null", "-"], timeout: 30)
        #expect(hls.status == 0, "\(hls.stderr.suffix(400))")
        // A browser sends a keyframe only when asked; LiveRelay asks when the stream needs one
        // (its floor is one every 5 s). A new RTSP client gets its first picture at once...
        for _ in 0..<3 {
            let t0 = Date()
            let first = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(rtsp)/phone",
                                                                "-frames:v", "1", "-f", "null", "-"], timeout: 30)
            let took = Date().timeIntervalSince(t0)
            #expect(first.status == 0 && took < 2.5, "first picture after \(took) s: \(first.stderr.suffix(300))")
            usleep(700_000)
        }
        // ...and HLS segments (1 s here) end at the keyframe each asks for, 200 ms ahead. Chromium
        // does not always answer (it makes keyframes of its own when it rescales, and drops a
        // request within 300 ms of the last): most segments, not all, start with one. Without
        // the asks, a keyframe comes every 5 s and one segment in five would.
        let playlist = (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "http://127.0.0.1:\(port)/streams/phone/hls/index.m3u8"], timeout: 5).stdout) ?? ""
        let segments = playlist.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.suffix(6)
        let durations = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.suffix(6).compactMap { Double($0.dropFirst(8).prefix { $0 != "," }) }
        #expect(segments.count == 6 && durations.allSatisfy { $0 <= 1.5 }, "\(playlist)")
        var startingWithKeyframe = 0
        for seg in segments {
            let file = dir.appendingPathComponent("s-\(seg)")
            _ = try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "-o", file.path, "http://127.0.0.1:\(port)/streams/phone/hls/\(seg)"], timeout: 5)
            let keys = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "quiet", "-select_streams", "v", "-show_entries", "packet=flags", "-of", "csv=p=0", file.path], timeout: 20)
            if keys.stdout.hasPrefix("K") { startingWithKeyframe += 1 }
        }
        print("WebRTCTests: WHIP HLS segments starting with a keyframe: \(startingWithKeyframe) of \(segments.count), durations \(durations)")
        #expect(startingWithKeyframe >= 4, "\(startingWithKeyframe) of 6 segments start with a keyframe: \(playlist)")
        let stream = Self.api(StreamView.self, port, "/api/streams/phone")?.stream
        #expect(stream?.state == .live, "\(String(describing: stream)) \(serve.stdout.suffix(1500)) \(serve.stderr.suffix(1500))")
        // The asks are counted: more than the 5 s floor alone would make in this test.
        let metrics = Self.metrics(port)
        #expect((metrics["liverelay_webrtc_keyframe_requests_total{direction=\"to_publishers\"}"] ?? 0) >= 8, "\(metrics)")
        #expect(metrics["liverelay_webrtc_sessions{direction=\"whip\"}"] == 1, "\(metrics)")
        // The page leaves on its own (browser.py quits Chromium, which a stop also does now).
        _ = publisher.wait(timeout: 30)
    }

    static let globalAddress = WebRTCBenchmark.globalAddress()

    /// `serve` with WebRTC on `address` (beyond loopback, so with an auth section: reading
    /// opened to anyone on purpose) and one stream, `cam`, configured as given.
    static func serveBeyondLoopback(_ address: String, cam: String, arguments: [String] = []) throws -> (child: ChildProcess, port: Int, dir: URL) {
        try Servers.serve("""
        auth:
          anonymous: [read]
        server:
          webrtc: {listen: "\(address):0"}
        streams:
          cam: \(cam)
        """, arguments: arguments)
    }

    /// `/metrics` of a server at `host:port`: the `liverelay_webrtc_*` samples by name and labels.
    static func metrics(_ port: Int, host: String = "127.0.0.1") -> [String: Double] {
        let text = (try? ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "3", "http://\(host):\(port)/metrics"], timeout: 5).stdout) ?? ""
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("liverelay_webrtc_") {
            let f = line.split(separator: " ")
            if f.count == 2, let v = Double(f[1]) { out[String(f[0])] = v }
        }
        return out
    }

    /// A second, independent WebRTC stack: GStreamer's webrtcbin (libnice, its own DTLS and
    /// SRTP) plays over WHEP and decodes the pictures.
    @Test(.enabled(if: globalAddress != nil, "needs a global IPv4 address"), .tags(.exclusive))
    func gstreamersWebrtcbinPlaysOverWHEP() throws {
        let address = try #require(Self.globalAddress)
        // Beyond loopback needs an auth section: reading opened on purpose.
        let (serve, port, dir) = try Self.serveBeyondLoopback(address, cam: #"{source: "testsrc://?size=640x360&fps=30&gop=30", preview: false}"#,
                                                              arguments: ["--verbose"])
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(1_500_000)
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/whep_gst.py").path,
                                                      "http://127.0.0.1:\(port)/streams/cam/whep", "--seconds", "5"], timeout: 60)
        let line = r.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try #require(try? Servers.decode(GstResult.self, String(line)), "\(r.output.suffix(800))")
        let log = serve.stdout + serve.stderr
        print("WebRTCTests: webrtcbin over WHEP: \(j), SRTP \(log.contains("srtp=AEAD_AES_128_GCM") ? "AES-GCM" : "AES-CM + HMAC-SHA1")")
        #expect(j.state == "connected", "\(j)")
        #expect((j.frames ?? 0) >= 60 && j.width == 640 && j.height == 360, "\(j)")
    }

    /// `serve` on the host side of `lab` (beyond loopback, so reading is opened on purpose),
    /// WebRTC bound there too (`webrtc`: more of server.webrtc), one 640x360 test camera.
    static func serve(facing lab: NetworkNamespace, webrtc: String = "", arguments: [String] = []) throws -> (serve: ChildProcess, port: Int, dir: URL) {
        let dir = Paths.tempDirectory("serve")
        let config = dir.appendingPathComponent("config.yaml")
        try """
        auth:
          anonymous: [read, metrics]
        server:
          webrtc: {listen: "\(lab.hostAddress):0"\(webrtc.isEmpty ? "" : ", " + webrtc)}
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30", preview: false}
        """.write(to: config, atomically: true, encoding: .utf8)
        let port = FreePort.tcp()
        let serve = try ChildProcess(Paths.liverelay, ["serve", "--config", config.path, "--listen", "\(lab.hostAddress):\(port)",
                                                       "--state-dir", dir.path] + arguments)
        guard serve.waitFor("listening on", timeout: 20) else {
            serve.stop()
            throw Servers.ServerError("serve did not start: \(serve.stderr.suffix(400))")
        }
        return (serve, port, dir)
    }

    /// Chromium inside `lab` on the stream's public page for `seconds`, reading the stamps into
    /// `csv`: browser.py's JSON line.
    static func watchInside(_ lab: NetworkNamespace, port: Int, csv: String, seconds: Int, _ extra: [String] = []) throws -> BrowserReport {
        let (cmd, args) = lab.command(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                       "http://\(lab.hostAddress):\(port)/streams/cam/watch", "--stamps", "video",
                                                       "--csv", csv, "--seconds", String(seconds), "--timeout", "40"] + extra)
        let browser = try ChildProcess(cmd, args)
        defer { browser.stop() }
        _ = browser.wait(timeout: 90)
        let line = browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        guard let j = try? BrowserReport.decode(line) else {
            throw Servers.ServerError("browser.py said no result: \(browser.stdout.suffix(300)) \(browser.stderr.suffix(400))")
        }
        return j
    }

    /// A viewer whose network blocks UDP: Chromium in a network namespace of its own, every UDP
    /// packet from it dropped, still plays over WHEP through ICE-TCP (RFC 6544: the answer's
    /// passive TCP candidate, RFC 4571 framing) and the stamps come back. (With `tcp: off` the
    /// same page says "WebRTC did not connect within 5 s".)
    @Test(.enabled(if: getuid() == 0, "needs root for a network namespace and iptables"))
    func chromiumPlaysOverICETCPWhenUDPIsBlocked() throws {
        let lab = try NetworkNamespace(tag: "itcp", net: 216)
        defer { lab.tearDown() }
        let (serve, port, dir) = try Self.serve(facing: lab, arguments: ["--verbose"])
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(serve.stdout.contains("ICE-TCP on tcp://\(lab.hostAddress):"), "\(serve.stdout.prefix(600))")
        try lab.addInputRule(["-p", "udp", "-j", "DROP"])
        usleep(1_000_000)
        let j = try Self.watchInside(lab, port: port, csv: dir.appendingPathComponent("stamps.csv").path, seconds: 6)
        print("WebRTCTests: Chromium over ICE-TCP: \(j)")
        let log = serve.stdout + serve.stderr
        #expect(j.player == "webrtc", "\(j) \(log.suffix(1500))")
        #expect((j.stamps ?? 0) >= 120, "\(j)")
        #expect((j.p50 ?? .greatestFiniteMagnitude) < 500, "\(j)")
        // The viewer connected over TCP: no UDP came through.
        #expect(log.contains("webrtc: viewer connected") && log.contains("over=tcp"), "\(log.suffix(2000))")
    }

    /// A viewer across a bad link: 2 % of what reaches it lost, 30 ± 10 ms of jitter (packets
    /// overtake each other). Chromium asks for what is missing (NACK), LiveRelay resends it from
    /// the viewer's history: after the resends almost nothing stays lost, and no stamped picture
    /// is missing for longer than a GOP (1 s).
    @Test(.enabled(if: getuid() == 0, "needs root for a network namespace and iptables"))
    func nackRepairsALossyJitteryLinkToAWHEPViewer() throws {
        let lab = try NetworkNamespace(tag: "wnak", net: 217)
        defer { lab.tearDown() }
        let (serve, port, dir) = try Self.serve(facing: lab, webrtc: "tcp: off")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        try lab.impairInbound(loss: 0.02, delayMs: 30, jitterMs: 10)
        let csv = dir.appendingPathComponent("stamps.csv").path
        let j = try Self.watchInside(lab, port: port, csv: csv, seconds: 12, ["--rtc-stats"])
        let rtc = j.rtc ?? BrowserReport.RTC()
        let rows = RecordingPlaybackTests.stampRows(csv)
        let gaps = zip(rows, rows.dropFirst()).map { $1.1 - $0.1 }
        print("WebRTCTests: WHEP across 2 % loss, 30 ± 10 ms: stamps \(j.stamps.map { "\($0)" } ?? "-"), p50 \(j.p50.map { "\($0)" } ?? "-") ms, longest gap \(gaps.max() ?? -1) ms, \(rtc)")
        #expect(j.player == "webrtc", "\(j)")
        let received = rtc.packetsReceived ?? 0, lost = rtc.packetsLost ?? 0, nacks = rtc.nackCount ?? 0
        // About 2 % of the packets were dropped on the way; Chromium asked for them again.
        #expect(received > 1000 && nacks >= received / 200, "\(rtc)")
        // Resent, most arrive: what stays lost is well under the 2 % dropped.
        #expect(Double(lost) <= Double(received) * 0.005, "\(rtc)")
        // No picture missing for longer than a GOP, over enough stamps to tell (the page reads
        // fewer of the 360 pictures when the machine is loaded: 230 in one run side by side).
        #expect((j.stamps ?? 0) >= 150 && (gaps.max() ?? .max) <= 1000, "\(j) gaps \(gaps.max() ?? -1)")
        // The server counted its resends: about as many as Chromium's NACKs asked for.
        let metrics = Self.metrics(port, host: lab.hostAddress)
        let resent = metrics["liverelay_webrtc_nack_resent_total"] ?? 0
        #expect(resent >= Double(nacks) / 2 && (metrics["liverelay_webrtc_sender_reports_total"] ?? 0) >= 10, "\(metrics) \(rtc)")
    }

    /// TURN (coturn, Debian's): LiveRelay offers the TURN server with credentials minted per
    /// client from coturn's shared secret (its REST scheme); Chromium, told to use TURN only
    /// (`?relay`), plays through the relay, so coturn accepted the credentials. A WHEP client
    /// gets the same in `Link` headers. The secret appears in no output.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/turnserver"), "needs coturn (scripts/setup.sh installs it)"))
    func chromiumPlaysThroughTURNWithCredentialsMintedFromCoturnsSecret() throws {
        let dir = Paths.tempDirectory("turn")
        defer { try? FileManager.default.removeItem(at: dir) }
        let secret = "coturn-shared-" + UUID().uuidString.prefix(12)
        let turnPort = FreePort.udp(), relayBase = 40_000 + Int(getpid() % 200) * 100
        let conf = dir.appendingPathComponent("turnserver.conf")
        try """
        listening-ip=127.0.0.1
        listening-port=\(turnPort)
        relay-ip=127.0.0.1
        min-port=\(relayBase)
        max-port=\(relayBase + 99)
        use-auth-secret
        static-auth-secret=\(secret)
        realm=liverelay.test
        allow-loopback-peers
        no-cli
        no-tls
        no-dtls
        no-tcp
        fingerprint
        log-file=\(dir.path)/turn.log
        simple-log
        verbose
        pidfile=\(dir.path)/turn.pid
        userdb=\(dir.path)/turndb
        """.write(to: conf, atomically: true, encoding: .utf8)
        let turn = try ChildProcess("/usr/bin/turnserver", ["-c", conf.path])
        defer { turn.stop() }
        usleep(1_000_000)
        #expect(turn.exitStatus == nil, "\(turn.stdout.suffix(800)) \(turn.stderr.suffix(400))")
        let (serve, port, sdir) = try Servers.serve("""
        server:
          webrtc:
            ice_servers:
              - {urls: ["turn:127.0.0.1:\(turnPort)?transport=udp"], secret: "\(secret)", ttl: 10m}
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30", preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: sdir) }
        usleep(1_500_000)
        // What a client is told: the TURN URL with a username "EXPIRY:NAME", about ten minutes on.
        let ice = Self.api(ICEServerList.self, port, "/streams/cam/whep/ice-servers")?.iceServers ?? []
        let username = ice.first?.username ?? ""
        let expiry = Int(username.split(separator: ":").first ?? "") ?? 0
        #expect(ice.first?.urls == ["turn:127.0.0.1:\(turnPort)?transport=udp"] && ice.first?.credential != nil, "\(ice)")
        #expect(abs(expiry - Int(Date().timeIntervalSince1970) - 600) < 30 && username.hasSuffix(":anonymous"), "\(username)")
        let whep = try post(port, "cam", Self.offer())
        #expect(whep.status == 201 && whep.headers.contains("rel=\"ice-server\"") && whep.headers.contains("credential-type=\"password\""), "\(whep.headers)")

        let csv = sdir.appendingPathComponent("stamps.csv").path
        let browser = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                         "http://127.0.0.1:\(port)/streams/cam/watch?relay", "--stamps", "video",
                                                         "--csv", csv, "--seconds", "6", "--timeout", "40"])
        defer { browser.stop() }
        _ = browser.wait(timeout: 90)
        let line = browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try #require(try? BrowserReport.decode(line), "\(browser.stdout) \(browser.stderr.suffix(400))")
        print("WebRTCTests: Chromium through TURN: \(j)")
        turn.stop()
        let turnLog = (try? String(contentsOf: dir.appendingPathComponent("turn.log"), encoding: .utf8)) ?? ""
        #expect(j.player == "webrtc", "\(j) \(turnLog.suffix(1500))")
        #expect((j.stamps ?? 0) >= 120, "\(j)")
        // coturn accepted the minted credentials and relayed.
        #expect(turnLog.contains("ALLOCATE processed, success"), "\(turnLog.suffix(1500))")
        #expect(!serve.stdout.contains(secret) && !serve.stderr.contains(secret))
    }

    /// A camera with AAC sound (gst-rtsp-server's, as most IP cameras send): its WHEP viewers
    /// hear it, transcoded to Opus (48 kHz stereo; the video passed through), decoded by
    /// GStreamer's webrtcbin: about as many samples as seconds played, and a tone, not silence.
    @Test(.enabled(if: globalAddress != nil, "needs a global IPv4 address"), .tags(.exclusive))
    func anAACCamerasSoundReachesWHEPViewersAsOpus() throws {
        let address = try #require(Self.globalAddress)
        let camera = try Servers.RTSP(mounts: [Servers.RTSP.aacCameraMount])
        let (serve, port, dir) = try Self.serveBeyondLoopback(address, cam: #"{source: "\#(camera.url("/av"))", transport: tcp, open_timeout: 20s, preview: false}"#)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        var live = false
        let until = Date().addingTimeInterval(25)
        while Date() < until, !live {
            live = Self.api(StreamView.self, port, "/api/streams/cam")?.stream.state == .live
            usleep(300_000)
        }
        try #require(live, "\(serve.stderr.suffix(600))")
        // The answer takes Opus for the AAC track.
        let ok = try post(port, "cam", Self.offer())
        #expect(ok.status == 201 && ok.body.contains("a=rtpmap:111 opus/48000/2") && !ok.body.contains("m=audio 0 "), "\(ok.body)")
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/whep_gst.py").path,
                                                      "http://127.0.0.1:\(port)/streams/cam/whep", "--seconds", "6"], timeout: 60)
        let line = r.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try #require(try? Servers.decode(GstResult.self, String(line)), "\(r.output.suffix(800))")
        print("WebRTCTests: AAC camera over WHEP: \(j)")
        #expect((j.frames ?? 0) >= 60, "\(j)")
        #expect(j.audioRate == 48000 && j.audioChannels == 2, "\(j)")
        // Six seconds asked, minus connection time: at least three seconds of sound.
        #expect((j.audioSamples ?? 0) >= 3 * 48000, "\(j)")
        #expect((j.audioPeak ?? 0) > 4000, "a tone at half volume, not silence: \(j)")
    }

    /// An offer as a browser makes it: H.264 (packetization mode 1) and Opus, bundled.
    static func offer(ufrag: String = "abcd", fingerprint: String = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")) -> String {
        [
            "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
            "m=video 9 UDP/TLS/RTP/SAVPF 96 102", "c=IN IP4 0.0.0.0", "a=mid:0", "a=ice-ufrag:\(ufrag)", "a=ice-pwd:0123456789012345678901",
            "a=fingerprint:\(fingerprint)", "a=setup:actpass", "a=recvonly", "a=rtcp-mux",
            "a=rtpmap:96 VP8/90000", "a=rtpmap:102 H264/90000", "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
            "a=rtcp-fb:102 nack", "a=rtcp-fb:102 nack pli",
            "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:1", "a=recvonly", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2",
        ].joined(separator: "\r\n") + "\r\n"
    }

    func post(_ port: Int, _ stream: String, _ body: String, _ extra: [String] = []) throws -> (status: Int, headers: String, body: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("offer-\(UUID().uuidString).sdp")
        try body.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-i", "--max-time", "5", "-X", "POST", "-H", "Content-Type: application/sdp",
                                                       "--data-binary", "@\(file.path)"] + extra + ["http://127.0.0.1:\(port)/streams/\(stream)/whep"], timeout: 10)
        let parts = r.stdout.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? "", status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func credentialsAreCheckedBeforeAnyICEAndHostileOffersAndDatagramsLeaveItServing() throws {
        let hash = try AccessTests.hash("viewerPW1")
        let (serve, port, dir) = try Servers.serve("""
        server:
          limits: {per_client: {viewers: 4}}
        auth:
          users:
            - {name: viewer, password: "\(hash)", permissions: [{action: read, streams: cam}]}
            - {name: other, password: "\(hash)", permissions: [{action: read, streams: elsewhere}]}
          anonymous: []
        streams:
          cam: {source: "testsrc://?size=320x180&fps=30&gop=30", preview: false}
          elsewhere: {source: "testsrc://?size=320x180&fps=15&gop=15", preview: false}
          pub: {source: publish, preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        usleep(1_500_000)
        let good = ["-u", "viewer:viewerPW1"]
        // Refused before any session exists: no credentials, wrong ones, another stream's.
        #expect(try post(port, "cam", Self.offer()).status == 401)
        #expect(try post(port, "cam", Self.offer(), ["-u", "viewer:wrongPW"]).status == 401)
        #expect(try post(port, "cam", Self.offer(), ["-u", "other:viewerPW1"]).status == 403)
        #expect(Self.webrtcSinks(port, good).isEmpty)
        // Publishing by WHIP needs the publish permission, which reading does not give.
        let whip = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "viewer:viewerPW1", "-X", "POST",
                                                          "-H", "Content-Type: application/sdp", "--data", "v=0", "http://127.0.0.1:\(port)/streams/pub/whip"], timeout: 10)
        #expect(whip.stdout == "403")
        // Bad offers: one line each, no session.
        #expect(try post(port, "cam", "hello", good).status == 400)
        #expect(try post(port, "cam", "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n", good).status == 400, "no ICE credentials")
        let noCodec = Self.offer().replacingOccurrences(of: "H264/90000", with: "H265/90000").replacingOccurrences(of: "opus/48000/2", with: "G722/8000")
        #expect(try post(port, "cam", noCodec, good).status == 406)
        // A stream the user may not read, there or not: refused alike.
        #expect(try post(port, "nosuch", Self.offer(), good).status == 403)
        let wrongType = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "viewer:viewerPW1", "-X", "POST",
                                                               "-H", "Content-Type: text/plain", "--data", "v=0", "http://127.0.0.1:\(port)/streams/cam/whep"], timeout: 10)
        #expect(wrongType.stdout == "415")
        #expect(Self.webrtcSinks(port, good).isEmpty)

        // A good offer: an answer with the offer's H.264 payload type, ICE-lite, a candidate;
        // the session is an output until it is deleted.
        let ok = try post(port, "cam", Self.offer(), good)
        #expect(ok.status == 201, "\(ok)")
        #expect(ok.body.contains("a=ice-lite") && ok.body.contains("a=rtpmap:102 H264/90000") && ok.body.contains("a=setup:passive"), "\(ok.body)")
        #expect(ok.body.contains("m=audio 0 "), "the stream has no audio: the audio section is rejected: \(ok.body)")
        let location = ok.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") }.map { String($0.dropFirst(9)).trimmingCharacters(in: .whitespaces) } ?? ""
        #expect(location.hasPrefix("/streams/cam/whep/"), "\(ok.headers)")
        #expect(Self.webrtcSinks(port, good).count == 1)
        let candidate = ok.body.split(separator: "\r\n").first { $0.hasPrefix("a=candidate:") }.map(String.init) ?? ""
        let udpPort = Int(candidate.split(separator: " ").dropFirst(5).first ?? "") ?? 0
        func attribute(_ name: String) -> String {
            ok.body.split(separator: "\r\n").first { $0.hasPrefix("a=\(name):") }.map { String($0.dropFirst(name.count + 3)) } ?? ""
        }
        let ufrag = attribute("ice-ufrag"), pwd = attribute("ice-pwd")
        #expect(udpPort > 0, "\(candidate)")
        let tcpCandidate = ok.body.split(separator: "\r\n").first { $0.hasPrefix("a=candidate:") && $0.contains(" tcp ") }.map(String.init) ?? ""
        let tcpPort = Int(tcpCandidate.split(separator: " ").dropFirst(5).first ?? "") ?? 0
        #expect(tcpPort > 0 && tcpCandidate.hasSuffix("typ host tcptype passive"), "\(ok.body)")

        // Mutated offers over HTTP (a browser's, with bytes flipped, cut, repeated): each answered
        // with a status, never a crash; sessions one address holds are capped (4 here).
        let mutated = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/hostile/webrtc_peer.py").path,
                                                            "--port", String(udpPort), "--ufrag", ufrag, "--pwd", pwd, "--count", "0",
                                                            "--offers", "http://127.0.0.1:\(port)/streams/cam/whep", "--user", "viewer:viewerPW1"], timeout: 120)
        #expect(mutated.status == 0, "\(mutated.output.suffix(600))")
        #expect(mutated.stdout.contains("429"), "the per-client cap never answered: \(mutated.stdout.suffix(400))")
        // Hostile datagrams on the shared port: mutated STUN (a real check with bits flipped,
        // lengths that overrun, a wrong password), DTLS and RTCP from an address with no session;
        // the same in ICE-TCP frames, bytes that break the framing, connections past the cap.
        let hostile = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/hostile/webrtc_peer.py").path,
                                                            "--port", String(udpPort), "--ufrag", ufrag, "--pwd", pwd,
                                                            "--count", "3000", "--tcp", String(tcpPort)], timeout: 90)
        #expect(hostile.status == 0, "\(hostile.output)")
        #expect(hostile.stdout.contains("mutated frames sent over ICE-TCP"), "\(hostile.output)")
        #expect(serve.exitStatus == nil, "\(serve.stderr.suffix(800))")
        // DELETE ends it; again is 404; another user cannot end someone's session.
        let other = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "other:viewerPW1", "-X", "DELETE", "http://127.0.0.1:\(port)\(location)"], timeout: 10)
        #expect(other.stdout == "403")
        let del = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "viewer:viewerPW1", "-X", "DELETE", "http://127.0.0.1:\(port)\(location)"], timeout: 10)
        #expect(del.stdout == "200")
        let again = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "viewer:viewerPW1", "-X", "DELETE", "http://127.0.0.1:\(port)\(location)"], timeout: 10)
        #expect(again.stdout == "404")
        usleep(300_000)
        // Its output is gone (the mutated offers' sessions, never connected, end after 15 s).
        let mine = "webrtc-" + String(location.split(separator: "/").last?.prefix(8) ?? "")
        #expect(!Self.webrtcSinks(port, good).contains { $0.name == mine }, "\(mine)")
        #expect(!serve.stdout.contains("viewerPW1") && !serve.stderr.contains("viewerPW1"))
    }
}
