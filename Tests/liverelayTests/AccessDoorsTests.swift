import Testing
import Foundation
import TestSupport
import Bench

/// The one authorizer behind every door of a real `serve`: a user granted one stream reads its
/// renditions over HTTP, RTSP and WHEP and nothing else; wrong RTMP keys and SRT passphrases are
/// limited like wrong passwords; a client's failures limit only that user from that client,
/// directly and behind the nginx edge.
@Suite(.ownThreads, .serialized) struct AccessDoorsTests {
    static let camKey = "phone-key-1234"
    static let fieldPhrase = "field-phrase-5678"

    static func code(_ args: [String]) throws -> String {
        try ChildProcess.run("/usr/bin/curl", ["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"] + args, timeout: 15).stdout
    }

    /// The status code of an RTSP DESCRIBE, sent by hand (ffprobe hides it).
    static func describe(_ port: Int, _ path: String, user: String, password: String) throws -> String {
        let script = """
        import base64, socket, sys
        s = socket.create_connection(("127.0.0.1", \(port)), timeout=15)
        auth = base64.b64encode(b"\(user):\(password)").decode()
        s.sendall(("DESCRIBE rtsp://127.0.0.1:\(port)/\(path) RTSP/1.0\\r\\nCSeq: 1\\r\\nAccept: application/sdp\\r\\nAuthorization: Basic " + auth + "\\r\\n\\r\\n").encode())
        print(s.recv(4096).decode(errors="replace").split(" ")[1])
        """
        return try ChildProcess.run("/usr/bin/python3", ["-c", script], timeout: 20).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func publish(_ url: String, seconds: Int = 1) throws -> Int32 {
        try ChildProcess.run("/usr/bin/timeout", ["-k", "1", "15", "/usr/bin/ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x96:rate=15",
                                                  "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "15", "-f",
                                                  url.hasPrefix("srt") ? "mpegts" : "flv", url], timeout: 30).status
    }

    @Test func everyDoorAsksTheOneAuthorizer() throws {
        let pw = ["camuser": "cam-secret-1", "ops": "ops-secret-2"]
        let h = try pw.mapValues { try AccessTests.hash($0) }
        let (serve, port, dir, rtsp) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
          webrtc: {listen: "127.0.0.1:0"}
          trusted_proxies: [127.0.0.1]
        auth:
          users:
            - {name: camuser, password: "\(h["camuser"]!)", permissions: [{action: read, streams: cam}]}
            - {name: ops, password: "\(h["ops"]!)", permissions: [read, metrics]}
          anonymous: [{action: read, streams: lobby}]
        ingest:
          rtmp: {listen: "127.0.0.1:0", app: live}
          srt: {listen: "127.0.0.1:0"}
        streams:
          cam:
            source: "testsrc://?size=320x180&fps=15&gop=15"
            preview: false
            renditions: [{name: 240p, height: 120, bitrate: 100k}]
          yard: {source: "testsrc://?size=320x180&fps=15&gop=15", preview: false}
          lobby: {source: "testsrc://?size=320x180&fps=15&gop=15", preview: false}
          phone: {source: publish, publish_key: "\(Self.camKey)", preview: false}
          field: {source: publish, publish_key: "\(Self.fieldPhrase)", preview: false}
        """, listener: "RTSP server")
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let rtmp = try #require(serve.listeningPort("RTMP ingest listening on", timeout: 30), "no RTMP ingest: \(serve.stderr.suffix(500))")
        let srt = try #require(serve.listeningPort("SRT ingest listening on", timeout: 30), "no SRT ingest: \(serve.stderr.suffix(500))")
        let base = "http://127.0.0.1:\(port)"
        let cam = ["-u", "camuser:\(pw["camuser"]!)"]

        // A user granted `cam` reads cam's rendition at every door, and nothing it was not granted.
        #expect(try Self.code(cam + ["\(base)/api/streams/cam_240p"]) == "200")
        #expect(try Self.code(cam + ["\(base)/api/streams/yard"]) == "403")
        #expect(try Self.describe(rtsp, "cam_240p", user: "camuser", password: pw["camuser"]!) == "200")
        #expect(try Self.describe(rtsp, "yard", user: "camuser", password: pw["camuser"]!) == "403")
        let offer = ["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", "v=0\r\n"]
        // Let in, and refused only for what it sent: not an offer.
        #expect(try Self.code(cam + offer + ["\(base)/streams/cam_240p/whep"]) == "400")
        #expect(try Self.code(cam + offer + ["\(base)/streams/yard/whep"]) == "403")

        // Wrong RTMP keys count like wrong passwords: ten, then the right key is refused too.
        for _ in 0..<10 { #expect(try Self.publish("rtmp://127.0.0.1:\(rtmp)/live/phone?key=guess") != 0) }
        #expect(try Self.publish("rtmp://127.0.0.1:\(rtmp)/live/phone?key=\(Self.camKey)") != 0, "the right key got through the limit")
        // SRT passphrases likewise (a stream's key is one secret whichever door guesses it:
        // `field`, not `phone`, here).
        for _ in 0..<10 { #expect(try Self.publish("srt://127.0.0.1:\(srt)?connect_timeout=2000&streamid=field&passphrase=wrong-phrase-1") != 0) }
        #expect(try Self.publish("srt://127.0.0.1:\(srt)?connect_timeout=2000&streamid=field&passphrase=\(Self.fieldPhrase)") != 0,
                "the right passphrase got through the limit")
        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "-u", "ops:\(pw["ops"]!)", "\(base)/metrics"], timeout: 10).stdout
        // (A wrong SRT passphrase fails inside libsrt's handshake: it is an auth failure, not a
        // refusal LiveRelay saw.)
        #expect(MetricsText.sum(metrics, "liverelay_ingest_refused_total", ["protocol": "rtmp", "reason": "key"]) == 10)
        for door in ["rtmp", "srt"] {
            #expect(MetricsText.sum(metrics, "liverelay_ingest_refused_total", ["protocol": door, "reason": "limited"]) == 1, "\(door)")
        }
        #expect(MetricsText.sum(metrics, "liverelay_auth_failures_total", [:]) == 20)

        // One client's wrong passwords limit that user from that client, no one else.
        for _ in 0..<10 { #expect(try Self.code(["-u", "ops:nope", "\(base)/api/streams"]) == "401") }
        #expect(try Self.code(["-u", "ops:\(pw["ops"]!)", "\(base)/api/streams"]) == "429")
        #expect(try Self.code(["\(base)/api/streams/lobby"]) == "200", "an anonymous read was limited")
        #expect(try Self.code(cam + ["\(base)/api/streams/cam"]) == "200", "another user at the same address was limited")

        // Behind the edge: the attacker (127.0.0.2) and a viewer (127.0.0.3) of the same user.
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("dist/nginx/liverelay-edge.conf")
        let edge = try NginxEdge(origin: port, shipped: shipped)
        defer { edge.child.stop() }
        let viaEdge = edge.url("api/streams")
        for _ in 0..<10 { #expect(try Self.code(["--interface", "127.0.0.2", "-u", "camuser:nope", viaEdge]) == "401") }
        #expect(try Self.code(["--interface", "127.0.0.2"] + cam + [viaEdge]) == "429")
        #expect(try Self.code(["--interface", "127.0.0.3"] + cam + [viaEdge]) == "200", "a viewer behind the edge was limited by another's failures")
        serve.stop()
        for secret in Array(pw.values) + [Self.camKey, Self.fieldPhrase] { #expect(!(serve.stdout + serve.stderr).contains(secret), "a secret reached the log") }
    }
}
