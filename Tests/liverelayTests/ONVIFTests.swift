import Testing
import Foundation
import TestSupport
import Bench
import RelayAPI
import Relay
import Synchronization

/// ONVIF as a VMS uses it, against ipycam (an ONVIF camera someone else wrote, run as it is,
/// with its undeclared `ptz:` prefix and unfilled GetStatus fields) whose profiles point at
/// gst-rtsp-server: found by WS-Discovery in a network namespace of its own, resolved as an
/// `onvif://` source and played, steered through the PTZ API with the `ptz` permission, and a
/// wrong password a one-line error. Then a hostile ONVIF camera: mutated SOAP and HTTP, and a
/// WS-Discovery flood with forged matches.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct ONVIFTests {
    /// A network namespace with only loopback up, for WS-Discovery, whose port 3702 is fixed
    /// (the machine is shared): commands run in it by `ip netns exec`.
    final class LoopbackNamespace {
        let name = "lronvif\(getpid() % 100_000)\(Int.random(in: 0..<1000))"

        init() throws {
            try FastRun.refuse("a network namespace")
            for args in [["netns", "add", name], ["netns", "exec", name, "ip", "link", "set", "lo", "up"],
                         ["netns", "exec", name, "ip", "route", "add", "224.0.0.0/4", "dev", "lo"]] {
                let r = try ChildProcess.run("/usr/sbin/ip", args, timeout: 20)
                guard r.status == 0 else { tearDown(); throw Servers.ServerError("ip \(args.joined(separator: " ")): \(r.stderr)") }
            }
        }

        func start(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
            try ChildProcess("/usr/sbin/ip", ["netns", "exec", name, executable] + arguments)
        }

        func run(_ executable: String, _ arguments: [String], environment: String = "", timeout: Double = 60) throws -> CommandResult {
            try ChildProcess.run("/usr/sbin/ip", ["netns", "exec", name, "/usr/bin/env"] + (environment.isEmpty ? [] : [environment]) + [executable] + arguments, timeout: timeout)
        }

        func tearDown() { _ = try? ChildProcess.run("/usr/sbin/ip", ["netns", "delete", name], timeout: 20) }
    }

    @Test func discoveredWithProfilesStreamsAndPTZ() throws {
        let net = try LoopbackNamespace()
        defer { net.tearDown() }
        let dir = Paths.tempDirectory("onvif-discover")
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = Paths.packageRoot.appendingPathComponent("scripts/onvif_camera.py").path
        let camera = try net.start("/bin/sh", ["-c", "cd '\(dir.path)' && exec \(Servers.ONVIFCamera.python) '\(script)' --http-port 8080 --rtsp-port 8554 --user admin --password 's3cret!' --discovery"])
        defer { camera.stop() }
        #expect(camera.waitFor("http://", timeout: 20), "\(camera.stderr)")
        let discover = ["onvif", "discover", "--interface", "127.0.0.1", "--timeout", "1.5"]
        let anonymous = try net.run(Paths.liverelay, discover).output
        let user = try net.run(Paths.liverelay, discover + ["--user", "admin"], environment: "LIVERELAY_ONVIF_PASSWORD=s3cret!").output
        let wrong = try net.run(Paths.liverelay, discover + ["--user", "admin", "--password", "nope"]).output
        let yaml = try net.run(Paths.liverelay, ["onvif", "discover", "--to", "127.0.0.1", "--timeout", "1.5", "--user", "admin", "--yaml"],
                               environment: "LIVERELAY_ONVIF_PASSWORD=s3cret!").output
        let out = [anonymous, user, wrong, yaml].joined(separator: "\n")
        #expect(anonymous.contains("http://127.0.0.1:8080/onvif/device_service") && anonymous.contains("not authorized"), "\(anonymous)")
        #expect(user.contains("model: PythonCam VirtualCam-1"), "\(user)")
        #expect(user.contains("profile Profile_Main (MainStream) H264 640x360 30 fps PTZ [main] rtsp://127.0.0.1:8554/main"), "\(user)")
        #expect(user.contains("profile Profile_Sub (SubStream) H264 320x180 30 fps PTZ [sub] rtsp://127.0.0.1:8554/sub"), "\(user)")
        #expect(user.contains("ptz: yes"), "\(user)")
        #expect(wrong.contains("profiles: not authorized (Sender not authorized)") && !wrong.contains("rtsp://"), "\(wrong)")
        #expect(yaml.contains("streams:\n  pythoncam-virtualcam-1:\n    source: \"onvif://admin:PASSWORD@127.0.0.1:8080/Profile_Main\""), "\(yaml)")
        #expect(!out.contains("s3cret"))
    }

    @Test func aFloodOfForgedDiscoveryAnswersIsBounded() throws {
        let net = try LoopbackNamespace()
        defer { net.tearDown() }
        let hostileScript = Paths.packageRoot.appendingPathComponent("scripts/hostile/onvif_camera.py").path
        let seed = HostileCameraTests.seed
        let hostile = try net.start(Servers.python, [hostileScript, "--port", "8080", "--seed", String(seed), "--exchanges", "100000", "--wsd"])
        defer { hostile.stop() }
        Thread.sleep(forTimeInterval: 1)
        let started = Date()
        var out = ""
        for _ in 0..<3 {
            let r = try net.run(Paths.liverelay, ["onvif", "discover", "--interface", "127.0.0.1", "--timeout", "2", "--user", "admin", "--password", "x"], timeout: 60)
            out += r.stdout + "rc=\(r.timedOut ? 124 : r.status)\n"
        }
        // Exit 0 or 1 each time (listed, or nothing answered), never a crash or timeout's 124.
        let codes = out.split(separator: "\n").filter { $0.hasPrefix("rc=") }
        #expect(codes.count == 3 && codes.allSatisfy { $0 == "rc=0" || $0 == "rc=1" }, "seed \(seed): \(out.suffix(3000))")
        // Every device listed is on the address its answer came from; a forged XAddr never leads elsewhere.
        let listed = out.split(separator: "\n").filter { $0.hasPrefix("http") }
        #expect(listed.allSatisfy { $0.hasPrefix("http://127.0.0.1") }, "seed \(seed): \(listed)")
        #expect(!out.contains("10.66.66.66"), "seed \(seed)")
        #expect(!listed.isEmpty && listed.count <= 6, "seed \(seed): one device per address: \(listed)")
        #expect(Date().timeIntervalSince(started) < 150)
    }

    @Test func anONVIFSourcePlaysTurnsAndRefusesAWrongPassword() throws {
        let camera = try Servers.ONVIFCamera(password: "cam-pass-7")
        let dir = Paths.tempDirectory("onvif-serve")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pw = ["operator": "operator-secret-1", "viewer": "viewer-secret-2"]
        let h = try pw.mapValues { try AccessTests.hash($0) }
        let (serve, port, _, rtspPort) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        auth:
          users:
            - {name: operator, password: "\(h["operator"]!)", permissions: [read, playback, ptz]}
            - {name: viewer, password: "\(h["viewer"]!)", permissions: [read, playback]}
          anonymous: [read]
        streams:
          cam: {source: "\(camera.url(password: "cam-pass-7"))", preview: false}
          wrong: {source: "\(camera.url(password: "not-the-password", profile: "Profile_Sub"))", preview: false}
          other: {source: "testsrc://?size=160x120&fps=15", preview: false}
        """, dir: dir, listener: "RTSP server")
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(HostileCameraTests.waitLive(port, "cam", timeout: 30), "\(serve.stderr.suffix(2000))")

        // The main profile's stream, through RTSP out to ffprobe.
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                                               "rtsp://viewer:\(pw["viewer"]!)@127.0.0.1:\(rtspPort)/cam"], timeout: 30)
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "640,360", "\(probe.output)")
        // And the camera's sub profile, resolved with it and read only now (on demand): RTSP `cam/sub`.
        #expect(try Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam_sub", maxTime: 8).stream.state == .idle)
        let sub = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                                             "rtsp://viewer:\(pw["viewer"]!)@127.0.0.1:\(rtspPort)/cam/sub"], timeout: 30)
        #expect(sub.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "320,180", "\(sub.output)")
        // The same sub stream to a WHEP player (GStreamer's webrtcbin): `?stream=sub`.
        let whep = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/whep_gst.py").path, base + "/streams/cam/whep?stream=sub",
                                                         "--user", "viewer", "--password", pw["viewer"]!, "--seconds", "7"], timeout: 60)
        let played = try #require(try? Servers.decode(WebRTCTests.GstResult.self, String(whep.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? "")),
                                  "\(whep.output.suffix(800))")
        #expect((played.frames ?? 0) >= 20 && played.width == 320 && played.height == 180, "\(played)")

        func call(_ method: String, _ path: String, _ who: String?, json: String? = nil) throws -> (code: String, body: String) {
            var args = ["-s", "-m", "20", "-X", method, "-w", "\n%{http_code}"]
            if let who { args += ["-u", "\(who):\(pw[who]!)"] }
            if let json { args += ["-H", "Content-Type: application/json", "--data-binary", json] }
            let out = try ChildProcess.run("/usr/bin/curl", args + [base + path], timeout: 30).stdout
            let code = out.split(separator: "\n").last.map(String.init) ?? ""
            return (code, String(out.dropLast(code.count)).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        func position() throws -> PTZPosition? {
            let s = try call("GET", "/api/streams/cam/ptz", "operator")
            return try Servers.decode(PTZStatus.self, s.body).position
        }

        // Steering needs ptz: a viewer and anonymous are refused, the operator is not.
        #expect(try call("GET", "/api/streams/cam/ptz", "viewer").code == "403")
        #expect(try call("POST", "/api/streams/cam/ptz", nil, json: #"{"action": "stop"}"#).code == "401")
        let before = try #require(try position())
        #expect(before.pan == 0 && before.tilt == 0, "\(before)")
        let status = try Servers.decode(PTZStatus.self, try call("GET", "/api/streams/cam/ptz", "operator").body)
        #expect(status.profile == "Profile_Main" && status.presets.map(\.token) == ["home"], "\(status)")

        // A move, held for a moment, then stopped: the camera reports where it went.
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "move", "pan": 0.8, "tilt": -0.4}"#).code == "200")
        Thread.sleep(forTimeInterval: 0.8)
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "stop"}"#).code == "200")
        let moved = try #require(try position())
        #expect((moved.pan ?? 0) > 0.1 && (moved.tilt ?? 0) < -0.05, "\(moved)")
        Thread.sleep(forTimeInterval: 0.5)
        let stopped = try #require(try position())
        #expect(abs((stopped.pan ?? 0) - (moved.pan ?? 0)) < 0.05, "still moving after stop: \(moved) then \(stopped)")

        // A preset saved here, then back home, then to the preset again.
        let set = try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "set", "name": "gate"}"#)
        let token = try #require(try Servers.decode(PTZResult.self, set.body).preset)
        let presets = try Servers.decode([PTZPreset].self, try call("GET", "/api/streams/cam/ptz/presets", "operator").body)
        #expect(presets.contains { $0.token == token && $0.name == "gate" }, "\(presets)")
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "goto", "preset": "home"}"#).code == "200")
        var home: PTZPosition?
        for _ in 0..<20 {
            home = try position()
            if abs(home?.pan ?? 1) < 0.02 { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(abs(home?.pan ?? 1) < 0.02, "\(String(describing: home))")
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: "{\"action\": \"goto\", \"preset\": \"\(token)\"}").code == "200")
        var back: PTZPosition?
        for _ in 0..<20 {
            back = try position()
            if abs((back?.pan ?? 0) - (moved.pan ?? 0)) < 0.05 { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(abs((back?.pan ?? 0) - (moved.pan ?? 0)) < 0.05, "\(String(describing: back)) vs \(moved)")

        // Bad commands and streams without a camera to steer.
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "move", "pan": 3}"#).code == "400")
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "goto"}"#).code == "400")
        #expect(try call("POST", "/api/streams/cam/ptz", "operator", json: #"{"action": "spin"}"#).code == "400")
        #expect(try call("GET", "/api/streams/other/ptz", "operator").code == "409")
        #expect(try call("GET", "/api/streams/nosuch/ptz", "operator").code == "404")

        // The wrong password: a one-line error naming the camera and the refusal, no password anywhere.
        let wrong = try call("GET", "/api/streams/wrong", "viewer").body
        #expect(wrong.contains("not authorized (Sender not authorized)"), "\(wrong)")
        #expect(try call("GET", "/api/streams/wrong/ptz", "operator").code == "502")

        // Every command on the audit log, by who gave it.
        let audit = try call("GET", "/api/audit", nil).code
        #expect(audit == "401" || audit == "403")
        serve.stop()
        for secret in ["cam-pass-7", "not-the-password", "operator-secret-1"] {
            #expect(!serve.stdout.contains(secret) && !serve.stderr.contains(secret), "\(secret) in serve's output")
        }
        let db = dir.appendingPathComponent("catalog.sqlite").path
        let lines = try ChildProcess.run("/usr/bin/sqlite3", [db, "SELECT who || ' ' || detail FROM audit WHERE action = 'ptz' ORDER BY id"], timeout: 10).stdout
        #expect(lines.contains("operator move pan 0.8 tilt -0.4 zoom 0.0") && lines.contains("operator stop") && lines.contains("operator set preset gate")
                && lines.contains("operator go to preset home"), "\(lines)")
    }

    @Test func theWallSteersTheSelectedCameraWhileAKeyIsHeld() throws {
        let camera = try Servers.ONVIFCamera(password: "cam-pass-8")
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "\(camera.url(password: "cam-pass-8"))", preview: false}
          other: {source: "testsrc://?size=160x120&fps=15", preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(HostileCameraTests.waitLive(port, "cam", timeout: 30), "\(serve.stderr.suffix(2000))")
        func position() throws -> PTZPosition? { try Servers.api(PTZStatus.self, "http://127.0.0.1:\(port)/api/streams/cam/ptz").position }
        #expect(try position()?.pan == 0)
        // Select the first tile (cam), hold → for a second, let go; then the Home preset's button.
        let steps = "key:1;sleep:1.5;eval:wall.ptz.stream;eval:wall.ptz.presets.map(p => p.token).join(',');hold:ArrowRight:1.2;sleep:0.6;eval:wall.ptz.moving"
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/",
                                                      "--steps", steps, "--keys-after", "2", "--seconds", "1"], timeout: 90)
        // The steps' evals: the selected stream, its presets' tokens, and whether it still moves (null).
        struct Steps: Decodable { var evals: [String?] }
        let report = try #require(r.stdout.split(separator: "\n").last.flatMap { try? JSONDecoder().decode(Steps.self, from: Data($0.utf8)) }, "\(r.output.suffix(2000))")
        let evals = report.evals
        #expect(evals.count == 3 && evals[0] == "cam" && evals[1] == "home", "\(evals)")
        #expect(evals.count == 3 && evals[2] == nil, "still moving after the key was let go: \(evals)")
        let turned = try #require(try position())
        #expect((turned.pan ?? 0) > 0.1 && abs(turned.tilt ?? 1) < 0.05, "\(turned)")
        Thread.sleep(forTimeInterval: 0.6)
        #expect(abs((try position()?.pan ?? 0) - (turned.pan ?? 0)) < 0.05, "the camera kept turning after the key was let go")
        // The preset is one click away.
        let home = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/",
                                                         "--steps", "key:1;sleep:1.5;click:[data-preset=\"home\"];sleep:1.5;eval:wall.ptz.errors", "--keys-after", "2", "--seconds", "1"], timeout: 90)
        #expect(home.stdout.contains("\"evals\": [0]"), "\(home.output.suffix(1500))")
        #expect(abs(try position()?.pan ?? 1) < 0.02)
        let audit = try ChildProcess.run("/usr/bin/sqlite3", [dir.appendingPathComponent("catalog.sqlite").path, "SELECT detail FROM audit WHERE action = 'ptz'"], timeout: 10).stdout
        #expect(audit.contains("move pan 0.5 tilt 0.0 zoom 0.0 for 1.0 s at most") && audit.contains("stop") && audit.contains("go to preset home"), "\(audit)")
    }

    @Test func aHostileONVIFCameraCannotStopServe() throws {
        let seed = HostileCameraTests.seed
        let peerPort = FreePort.tcp()
        let exchanges = 400
        let script = Paths.packageRoot.appendingPathComponent("scripts/hostile/onvif_camera.py").path
        let hostile = try ChildProcess(Servers.python, [script, "--port", String(peerPort), "--seed", String(seed), "--exchanges", String(exchanges)])
        defer { hostile.stop() }
        #expect(FreePort.waitUntilListening(peerPort))
        var streams = "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}\n"
        for i in 0..<4 {
            streams += "  cam\(i): {source: \"onvif://admin\(i):secret@127.0.0.1:\(peerPort)/\", preview: false, open_timeout: 2s, read_timeout: 1s}\n"
        }
        let (serve, port, dir) = try Servers.serve("streams:\n" + streams)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        // Operators steering the hostile camera the whole time: every answer one of the API's.
        let answers = Mutex<[String]>([])
        let stop = Mutex(false)
        let threads = (0..<2).map { k in
            Thread {
                var n = 0
                while !stop.withLock({ $0 }) {
                    let path = "http://127.0.0.1:\(port)/api/streams/cam\(n % 4)/ptz"
                    let args = n % 3 == 0 ? [path] : ["-X", "POST", "--data-binary", k == 0 ? #"{"action": "move", "pan": 0.5}"# : #"{"action": "set", "name": "x"}"#, path]
                    let code = (try? ChildProcess.run("/usr/bin/curl", ["-s", "-m", "40", "-o", "/dev/null", "-w", "%{http_code}"] + args, timeout: 60).stdout) ?? "?"
                    answers.withLock { $0.append(code) }
                    n += 1
                }
            }
        }
        threads.forEach { $0.start() }
        HostileOriginTests.expectOutlived(hostile, exchanges: exchanges, serve: serve, port: port, seed: seed, timeout: 240)
        stop.withLock { $0 = true }
        Thread.sleep(forTimeInterval: 1)
        let codes = answers.withLock { $0 }
        #expect(codes.count > 20, "seed \(seed): \(codes.count) PTZ requests")
        #expect(codes.allSatisfy { ["200", "502", "504", "409"].contains($0) }, "seed \(seed): \(Set(codes))")
        #expect(!serve.stdout.contains("secret") && !serve.stderr.contains("secret"), "seed \(seed)")
    }
}
