import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// Talk back: an operator's voice from the wall's push-to-talk (Chromium, its fake microphone
/// playing a 440 Hz tone) reaches a camera's speaker through GStreamer's ONVIF RTSP server's
/// backchannel, in PCMU over TCP and AAC over UDP, and a field unit publishing by WHIP (a second
/// Chromium) hears it; one talker at a time, each talk audited and hooked, by permission.
@Suite(.ownThreads, .serialized) struct TalkTests {
    /// GStreamer's ONVIF camera with backchannels (`scripts/backchannel_camera.py`): its port,
    /// writing what it hears into `dir`.
    static func camera(_ dir: URL) throws -> (ChildProcess, Int) {
        let cam = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/backchannel_camera.py").path, "0", dir.path])
        guard cam.waitFor("rtsp://", timeout: 20),
              let port = cam.stdout.split(separator: " ").first?.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
            cam.stop()
            throw Servers.ServerError("the backchannel camera did not start: \((cam.stdout + cam.stderr).suffix(800))")
        }
        return (cam, port)
    }

    /// A WAV of `seconds` of 440 Hz, then silence: what the fake microphone plays.
    static func tone(_ dir: URL, seconds: Int) throws -> String {
        let file = dir.appendingPathComponent("tone.wav").path
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=\(seconds):sample_rate=48000",
                                                         "-af", "apad=pad_dur=0.5,volume=0.5", "-ac", "1", "-c:a", "pcm_s16le", file], timeout: 20)
        guard r.status == 0 else { throw Servers.ServerError("ffmpeg: \(r.output)") }
        return file
    }

    /// What a camera wrote, decoded by ffmpeg (`input` says its format): how long it is loud
    /// (its 20 ms windows of RMS above 1000, so a gap a loaded machine left is not counted), and
    /// its pitch (zero crossings within those windows).
    static func heard(_ input: [String]) throws -> (seconds: Double, hz: Double) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("heard-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y"] + input + ["-f", "s16le", "-ac", "1", "-ar", "8000", out.path], timeout: 30)
        guard r.status == 0 else { throw Servers.ServerError("ffmpeg: \(r.output)") }
        let bytes = try Data(contentsOf: out)
        let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Double(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) }
        var loud = 0, crossings = 0
        for start in stride(from: 0, to: samples.count - 160, by: 160) {
            let w = samples[start..<(start + 160)]
            guard (w.reduce(0) { $0 + $1 * $1 } / 160).squareRoot() > 1000 else { continue }
            loud += 1
            for i in (start + 1)..<(start + 160) where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        }
        let seconds = Double(loud) * 0.02
        return (seconds, seconds > 0 ? Double(crossings) / 2 / seconds : 0)
    }

    /// The wall's push-to-talk reaches a PCMU camera over TCP and an AAC camera over UDP: each
    /// file holds the tone at 440 Hz for about as long as `t` was held.
    @Test func theWallsPushToTalkReachesAnONVIFCamerasBackchannelInPCMUAndAAC() throws {
        let dir = Paths.tempDirectory("talk")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cam, camPort) = try Self.camera(dir)
        defer { cam.stop() }
        let (serve, port, serveDir) = try Servers.serve("""
        streams:
          door-a: {source: "rtsp://127.0.0.1:\(camPort)/pcmu", talk: true, transport: tcp, preview: false}
          door-b: {source: "rtsp://127.0.0.1:\(camPort)/aac", talk: true, transport: udp, preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: serveDir) }
        for (name, format) in [("door-a", "PCMU/8000"), ("door-b", "MPEG4-GENERIC/16000")] {
            #expect(HooksTests.waitUntil(20) { Servers.apiIfAny(TalkState.self, "http://127.0.0.1:\(port)/streams/\(name)/talk")?.available == true },
                    "\(name) has no talk path: \(serve.stderr.suffix(1500))")
            #expect(try Servers.api(TalkState.self, "http://127.0.0.1:\(port)/streams/\(name)/talk").format == format)
        }
        let tone = try Self.tone(dir, seconds: 12)
        let state = "eval:JSON.stringify({state: window.wall.talk.state, error: window.wall.talk.error, sessions: window.wall.talk.sessions})"
        let browser = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/",
                                                        "--fake-mic", tone, "--keys-after", "2",
                                                        "--steps", "key:1;sleep:1;hold:t:3;sleep:1;\(state);key:2;sleep:1;hold:t:3;sleep:1;\(state)",
                                                        "--seconds", "0.5"])
        defer { browser.stop() }
        #expect(browser.wait(timeout: 90), "\((browser.stdout + browser.stderr).suffix(800))")
        #expect(browser.stdout.contains(#"\"sessions\":2"#), "\(browser.stdout.suffix(800)) \(browser.stderr.suffix(800))")
        // Each camera heard the tone at its pitch for at most the 3 s held (less the microphone's
        // opening and the connection, which take longer on a loaded machine), in its own codec.
        let pcmu = try Self.heard(["-f", "mulaw", "-ar", "8000", "-ac", "1", "-i", dir.appendingPathComponent("back-pcmu.ulaw").path])
        #expect(abs(pcmu.hz - 440) < 10 && pcmu.seconds > 1.0 && pcmu.seconds < 3.4, "PCMU: \(pcmu)")
        let aac = try Self.heard(["-i", dir.appendingPathComponent("back-aac.aac").path])
        #expect(abs(aac.hz - 440) < 10 && aac.seconds > 1.0 && aac.seconds < 3.6, "AAC: \(aac)")
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate", "-of", "csv=p=0",
                                                              dir.appendingPathComponent("back-aac.aac").path], timeout: 20)
        #expect(probe.stdout.contains("aac,16000"), "\(probe.output)")
    }

    /// A field unit publishing by WHIP (Chromium's publish page) hears a second Chromium's
    /// push-to-talk: its received audio track carries the 440 Hz tone.
    @Test func aWHIPFieldUnitHearsTheWallsPushToTalk() throws {
        let dir = Paths.tempDirectory("talk-unit")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (serve, port, serveDir) = try Servers.serve("streams:\n  unit: {source: publish, preview: false}\n")
        defer { serve.stop(); try? FileManager.default.removeItem(at: serveDir) }
        let level = "eval:JSON.stringify(window.talkLevel ? window.talkLevel() : null)"
        let unit = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                     "http://127.0.0.1:\(port)/streams/unit/publish?auto", "--fake-camera", "--keys-after", "1",
                                                     "--steps", Array(repeating: "sleep:0.5;\(level)", count: 30).joined(separator: ";"), "--seconds", "0.5"])
        defer { unit.stop() }
        #expect(HooksTests.waitUntil(30) { Servers.apiIfAny(TalkState.self, "http://127.0.0.1:\(port)/streams/unit/talk")?.format == "OPUS/48000/2" },
                "the field unit has no talk path: \((unit.stdout + unit.stderr).suffix(800)) \(serve.stderr.suffix(800))")
        let tone = try Self.tone(dir, seconds: 8)
        let wall = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/",
                                                     "--fake-mic", tone, "--keys-after", "2", "--steps", "key:1;sleep:1;hold:t:4", "--seconds", "0.5"])
        defer { wall.stop() }
        #expect(wall.wait(timeout: 60), "\((wall.stdout + wall.stderr).suffix(800))")
        #expect(unit.wait(timeout: 60), "\((unit.stdout + unit.stderr).suffix(800))")
        struct Level: Decodable { var rms: Double; var peakHz: Double }
        struct Report: Decodable { var evals: [String] }
        let line = try #require(unit.stdout.split(separator: "\n").last { $0.hasPrefix("{") }, "\((unit.stdout + unit.stderr).suffix(800))")
        let levels = try JSONDecoder().decode(Report.self, from: Data(line.utf8)).evals.compactMap { try? JSONDecoder().decode(Level.self, from: Data($0.utf8)) }
        let loud = levels.filter { $0.rms > 0.01 }
        // About 4 s held, read every 0.5 s: several loud readings, each at the tone (three: on
        // a loaded machine the talk path's setup takes up to 2 s of the hold).
        #expect(loud.count >= 3 && loud.allSatisfy { abs($0.peakHz - 440) < 12 }, "\(levels)")
    }

    /// One talker at a time: a second is refused 409 naming the first, `admin` takes the floor
    /// (the first is ended, "taken by"), a user without `talk` gets 403, a stream with no talk
    /// path 422; every talk is in the audit log and the hooks, with its start and end.
    @Test func oneTalkerAtATimeAuditedAndHookedByPermission() throws {
        let dir = Paths.tempDirectory("talk-floor")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cam, camPort) = try Self.camera(dir)
        defer { cam.stop() }
        let log = dir.appendingPathComponent("hooks.log")
        let receiver = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/hook_receiver.py").path, log.path])
        defer { receiver.stop() }
        #expect(receiver.waitFor("listening", timeout: 10))
        let hookPort = try #require(receiver.stdout.split(separator: " ").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        let pw = ["ann": "ann-talks-1", "bob": "bob-talks-2", "cat": "cat-reads-3", "boss": "boss-rules-4"]
        let h = try pw.mapValues { try AccessTests.hash($0) }
        let (serve, port, serveDir) = try Servers.serve("""
        auth:
          users:
            - {name: ann, password: "\(h["ann"]!)", permissions: [read, talk]}
            - {name: bob, password: "\(h["bob"]!)", permissions: [read, talk]}
            - {name: cat, password: "\(h["cat"]!)", permissions: [read]}
            - {name: boss, password: "\(h["boss"]!)", permissions: [read, talk, admin]}
        hooks:
          webhooks:
            - {url: "http://127.0.0.1:\(hookPort)/hook", events: [talk_started, talk_ended]}
        streams:
          door: {source: "rtsp://127.0.0.1:\(camPort)/pcmu", talk: true, transport: tcp, preview: false}
          lobby: {source: "testsrc://?size=160x96&fps=15&gop=15", preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: serveDir) }
        let base = "http://127.0.0.1:\(port)"
        #expect(HooksTests.waitUntil(20) { Servers.apiIfAny(TalkState.self, "\(base)/streams/door/talk", ["-u", "ann:\(pw["ann"]!)"])?.available == true })
        // A browser's offer, as the talk endpoint takes it (no browser needed to hold the floor).
        let offer = dir.appendingPathComponent("offer.sdp")
        try """
        v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n\
        a=mid:0\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n\
        a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r\na=setup:actpass\r\na=sendonly\r\na=rtcp-mux\r\n\
        a=rtpmap:111 opus/48000/2\r\n
        """.write(to: offer, atomically: true, encoding: .utf8)
        func talk(_ user: String, _ stream: String = "door") throws -> (code: Int, location: String?, body: String) {
            let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-i", "-m", "10", "-u", "\(user):\(pw[user]!)", "-H", "Content-Type: application/sdp",
                                                           "--data-binary", "@\(offer.path)", "\(base)/streams/\(stream)/talk"], timeout: 15)
            let head = r.stdout.split(separator: "\r\n\r\n", maxSplits: 1).first.map(String.init) ?? ""
            let code = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
            let location = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") }.map { String($0.dropFirst(9)).trimmingCharacters(in: .whitespaces) }
            return (code, location, r.stdout)
        }
        let ann = try talk("ann")
        #expect(ann.code == 201 && ann.location?.hasPrefix("/streams/door/talk/") == true, "\(ann.body.prefix(600))")
        let bob = try talk("bob")
        #expect(bob.code == 409 && bob.body.contains("ann is talking to door"), "\(bob.body.prefix(600))")
        #expect(try talk("cat").code == 403)
        #expect(try talk("ann", "lobby").code == 422)
        #expect(Servers.apiIfAny(TalkState.self, "\(base)/streams/door/talk", ["-u", "bob:\(pw["bob"]!)"])?.talker?.who == "ann")
        // admin takes the floor; ann's talk ends, taken by boss.
        let boss = try talk("boss")
        #expect(boss.code == 201, "\(boss.body.prefix(600))")
        #expect(Servers.apiIfAny(TalkState.self, "\(base)/streams/door/talk", ["-u", "bob:\(pw["bob"]!)"])?.talker?.who == "boss")
        let end = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10", "-X", "DELETE", "-u", "boss:\(pw["boss"]!)",
                                                         "\(base)\(boss.location ?? "/none")"], timeout: 15)
        #expect(end.stdout == "200")
        #expect(Servers.apiIfAny(TalkState.self, "\(base)/streams/door/talk", ["-u", "bob:\(pw["bob"]!)"])?.talker == nil)
        // A bad offer is refused and takes no floor.
        try "v=0\r\nm=audio 9 RTP/AVP 0\r\n".write(to: offer, atomically: true, encoding: .utf8)
        #expect(try talk("bob").code == 400)
        #expect(Servers.apiIfAny(TalkState.self, "\(base)/streams/door/talk", ["-u", "bob:\(pw["bob"]!)"])?.talker == nil)
        // Each talk in the hooks, started and ended, with who and why.
        let events = { HooksTests.received(log).compactMap(\.json) }
        #expect(HooksTests.waitUntil(10) { events().filter { $0.event == .talkEnded }.count == 2 }, "\(events())")
        let started = events().filter { $0.event == .talkStarted }.map { $0.details["by"] ?? "" }
        let ended = events().filter { $0.event == .talkEnded }.map { "\($0.details["by"] ?? ""): \($0.details["reason"] ?? "")" }
        #expect(started == ["ann", "boss"], "\(started)")
        #expect(ended.contains("ann: taken by boss") && ended.contains { $0.hasPrefix("boss: the talker left") }, "\(ended)")
        // And in the audit log: who, the stream, start and end.
        let audit = try Servers.api([AuditEntry].self, "\(base)/api/audit?stream=door", ["-u", "boss:\(pw["boss"]!)"])
        let talks = audit.filter { $0.action == .talk }
        #expect(talks.filter { $0.end != nil }.map(\.who).sorted() == ["ann", "boss"], "\(talks)")
        #expect(talks.filter { $0.end == nil }.map(\.who).sorted() == ["ann", "boss"], "\(talks)")
        #expect(talks.allSatisfy { $0.stream == "door" && $0.start != nil })
        // No password in the log.
        #expect(!pw.values.contains { serve.stderr.contains($0) })
    }
}
