import Testing
import Foundation
import Synchronization
import MediaCore
import Access
@testable import Relay
import Demux
import Decode
import TestSupport

@Suite(.ownThreads, .tags(.fast)) struct ConfigurationTests {
    /// Parsing lists a configuration's secrets and writes them nowhere: the program hands them
    /// to the Redactor (`serve` does before its first line).
    @Test func parsingListsItsSecretsAndRemembersNone() throws {
        // Secrets of this run only: the Redactor is the process's, and remembers for good.
        let run = String(UInt32.random(in: 100_000...999_999))
        let expected = ["signing-secret-0123456789-abcdefgh-\(run)", "srt-passphrase-\(run)", "rtmp-fleet-key-\(run)", "cam-password-\(run)",
                        "forward-key-\(run)", "phone-key-\(run)", "turn-credential-\(run)", "hook-secret-0123456789-\(run)", "push-password-\(run)"]
        let c = try Configuration.parse("""
        auth:
          signed_urls: {secret: "\(expected[0])"}
        ingest:
          srt: {listen: "127.0.0.1:0", passphrase: "\(expected[1])"}
          rtmp: {listen: "127.0.0.1:0", publish_key: "\(expected[2])"}
        server:
          webrtc: {ice_servers: [{urls: "turn:turn.example:3478", username: u, credential: "\(expected[6])"}]}
        hooks:
          webhooks: [{url: "http://127.0.0.1:9/hook", secret: "\(expected[7])"}]
        streams:
          cam: {source: "rtsp://viewer:\(expected[3])@camera.local/s1", forward: ["rtmp://live.example/app/\(expected[4])"],
                hls: {variant: lowLatency, push: "https://pusher:\(expected[8])@origin.example/live/cam/"}}
          phone: {source: publish, publish_key: "\(expected[5])"}
        """, sources: TestSources.opener)
        #expect(Set(c.secrets).isSuperset(of: expected), "\(c.secrets)")
        for secret in expected {
            #expect(Redactor.scrub("said \(secret)").hasSuffix(secret), "parsing remembered \(secret)")
        }
        Redactor.remember(secrets: c.secrets)
        for secret in expected { #expect(Redactor.scrub("said \(secret)") == "said ***") }
    }

    @Test func parsesTheDocumentedShape() throws {
        let c = try Configuration.parse("""
        server:
          listen: 127.0.0.1:9090
        streams:
          cam1:
            source: rtsp://user:pass@camera.local/stream1
            transport: udp
            hwaccel: none
            decode_threads: 3
            title: Unit 12 bodycam
            preview:
              ordering: arrival
              freshness: max_age
              max_age_ms: 250
              size: 640x360
              fps: 15
        """, sources: TestSources.opener)
        #expect(c.listenPort == 9090)
        let s = try #require(c.streams.first)
        #expect(s.sourceOptions.transport == .udp)
        #expect(s.sourceOptions.reorderWait == 0.05 && s.sourceOptions.reorderQueueSize == nil)
        #expect(s.preview?.policy.freshness == .maxAge(milliseconds: 250))
        #expect(s.preview?.width == 640)
        #expect(s.decoderOptions.sliceThreads == 3)
        let clean = try Configuration.parse("streams:\n  a:\n    source: testsrc://\n    preview: { freshness: clean }", sources: TestSources.opener)
        #expect(clean.streams.first?.preview?.policy.freshness == .clean)
        let d = try Configuration.parse("streams:\n  a:\n    source: testsrc://", sources: TestSources.opener)
        #expect(d.streams.first?.decoderOptions.sliceThreads == 2)
    }

    /// Every example in configs/ is valid, with the sinks it shows.
    @Test func theExampleConfigurationsParse() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("configs")
        for name in ["demo.yaml", "bodycam-ops.yaml", "hls-republish.yaml"] {
            // As `serve` checks them: the ones bound beyond loopback carry an auth section.
            try Configuration.load(file: dir.appendingPathComponent(name).path, sources: TestSources.opener).validateExposure(file: name)
        }
        // The package's default configuration and the compose fleet's nodes.
        let dist = dir.deletingLastPathComponent().appendingPathComponent("dist")
        for name in ["liverelay.yaml", "fleet/node1.yaml", "fleet/node2.yaml"] {
            try Configuration.load(file: dist.appendingPathComponent(name).path, sources: TestSources.opener).validateExposure(file: name)
        }
        let republish = try Configuration.load(file: dir.appendingPathComponent("hls-republish.yaml").path, sources: TestSources.opener)
        let event = try #require(republish.streams.first { $0.name == "event" })
        #expect(event.hls?.variant == .lowLatency && event.hls?.partDuration == 0.2 && event.record?.segmentDuration == 3600)
        #expect(event.forward.count == 1 && event.sourceOptions.listen && event.preview == nil)
    }

    @Test(arguments: [
        ("streams:\n  cam1:\n    source: testsrc://\n    preview:\n      ordering: fast", "streams.cam1.preview.ordering: expected presentation or arrival, got \"fast\""),
        ("streams:\n  cam1:\n    source: testsrc://\n    trasnport: udp", "streams.cam1.trasnport: unknown key"),
        ("streams:\n  cam1:\n    transport: udp", "streams.cam1.source: missing"),
        ("server:\n  listen: nowhere\nstreams:\n  a:\n    source: testsrc://", "server.listen: expected HOST:PORT"),
        ("streams: [", "not valid YAML"),
        ("streams:\n  c:\n    source: testsrc://\n    decode_threads: 0", "streams.c.decode_threads:"),
        ("streams:\n  cam1:\n    source: gopher://x", "streams.cam1.source: unsupported scheme"),
        ("streams:\n  cam1:\n    source: testsrc://\n    preview:\n      freshness: spotless", "streams.cam1.preview.freshness: expected latest, max_age, lossless or clean"),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      variant: dash", "streams.c.hls.variant: expected mpegts, fmp4 or lowLatency, got \"dash\""),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      segment_duration: soon", "streams.c.hls.segment_duration: expected a duration"),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      push: ftp://x/", "streams.c.hls.push: expected an http:// or https:// URL"),
        ("streams:\n  c:\n    source: testsrc://\n    record: {}", "streams.c.record.path: missing"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [rtmp://a/b/KEY, 'ftp://x/y']", "streams.c.forward[1]: expected an rtmp://"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [{url: 'ftp://x/y'}]", "streams.c.forward[0].url: expected an rtmp://"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [{ca_file: /etc/hostname}]", "streams.c.forward[0].url: missing"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [{url: 'rtmps://a/b/k', ca_file: /nonexistent/ca.pem}]", "streams.c.forward[0].ca_file: /nonexistent/ca.pem cannot be read"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [{url: 'srt://a:1', ca_file: /etc/hostname}]", "streams.c.forward[0].ca_file: only an rtmps:// destination"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [{url: 'rtmps://a/b/k', pin: x}]", "streams.c.forward[0].pin: unknown key"),
        ("streams:\n  c:\n    source: testsrc://\n    srt_read_passphrase: short", "streams.c.srt_read_passphrase: SRT passphrases are 10 to 79 characters"),
        // Regression: an empty query item once indexed an empty split and killed serve.
        ("streams:\n  c:\n    source: \"testsrc://?=\"", "streams.c.source: a query item without a name"),
        ("streams:\n  c:\n    source: \"testsrc://?&=&\"", "streams.c.source: a query item without a name"),
        ("auth:\n  users: [{name: ops, password: plain}]\nstreams:\n  c:\n    source: testsrc://", "auth.users[0].password: expected a bcrypt hash"),
        ("auth:\n  anonymous: [watch]\nstreams:\n  c:\n    source: testsrc://", "auth.anonymous[0]: expected read, publish, admin, metrics, playback, export, incident, ptz or talk"),
        ("auth:\n  usres: []\nstreams:\n  c:\n    source: testsrc://", "auth.usres: unknown key"),
        ("server:\n  tls: {cert: c.pem}\nstreams:\n  c:\n    source: testsrc://", "server.tls.key: missing"),
        // Publishers: a push source beyond loopback must carry a credential.
        ("streams:\n  p:\n    source: rtmp://0.0.0.0:1935/live/phone\n    listen: true", "streams.p.source: a rtmp source that accepts pushes on 0.0.0.0"),
        ("streams:\n  p:\n    source: \"srt://0.0.0.0:9000?mode=listener\"\n    listen: true", "streams.p.source: an SRT listener reachable beyond loopback needs a passphrase"),
        ("streams:\n  p:\n    source: udp://0.0.0.0:5000", "streams.p.source: a udp source that accepts pushes on 0.0.0.0"),
        ("streams:\n  p:\n    source: udp://:5000", "streams.p.source: a udp source that accepts pushes on every interface"),
        // The one-port ingest.
        ("ingest:\n  rtmp: {app: live}\nstreams:\n  p: {source: publish}", "ingest.rtmp.listen: missing"),
        ("ingest:\n  rtmp: {listen: 1935}\nstreams:\n  p: {source: publish}", "ingest.rtmp.listen: expected HOST:PORT"),
        ("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\"}\nstreams:\n  p: {source: publish}", "ingest.rtmp.publish_key: ingest.rtmp listens beyond loopback and stream \"p\" has no publish_key"),
        ("ingest:\n  rtmp: {listen: \"127.0.0.1:1935\", app: \"a/b\"}\nstreams:\n  p: {source: publish}", "ingest.rtmp.app: letters, digits"),
        ("ingest:\n  srtx: {}\nstreams:\n  p: {source: publish}", "ingest.srtx: unknown key"),
        ("ingest:\n  rtmp: {listen: \"127.0.0.1:1935\", tls: true}\nstreams:\n  p: {source: publish}", "ingest.rtmp.tls: RTMPS uses server.tls's certificate"),
        ("server:\n  rtsp: {listen: \"8554\"}\nstreams:\n  c: {source: testsrc://}", "server.rtsp.listen: expected HOST:PORT"),
        ("server:\n  rtsp: {}\nstreams:\n  c: {source: testsrc://}", "server.rtsp.listen: missing"),
        ("server:\n  rtsp: {listen: \"127.0.0.1:8554\", session_timeout: 1ms}\nstreams:\n  c: {source: testsrc://}", "server.rtsp.session_timeout:"),
        ("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\", auto_create: true}\nstreams:\n  p: {source: publish, publish_key: k}", "ingest.rtmp.publish_key: ingest.rtmp.auto_create beyond loopback"),
        ("ingest:\n  srt: {passphrase: \"long-enough-1\"}\nstreams:\n  p: {source: publish}", "ingest.srt.listen: missing"),
        ("ingest:\n  srt: {listen: \"127.0.0.1:8890\", passphrase: short}\nstreams:\n  p: {source: publish}", "ingest.srt.passphrase: SRT passphrases are 10 to 79 characters"),
        ("ingest:\n  srt: {listen: \"127.0.0.1:8890\", latency: 20}\nstreams:\n  p: {source: publish}", "ingest.srt.latency: expected a duration"),
        ("ingest:\n  srt: {listen: \"127.0.0.1:8890\"}\nstreams:\n  p: {source: publish, publish_key: k}", "streams.p.publish_key: with ingest.srt, a stream's publish_key is its SRT passphrase"),
        ("ingest:\n  srt: {listen: \"0.0.0.0:8890\"}\nstreams:\n  p: {source: publish}", "ingest.srt.passphrase: ingest.srt listens beyond loopback and stream \"p\" has no publish_key"),
        ("ingest:\n  srt: {listen: \"0.0.0.0:8890\", auto_create: true}\nstreams:\n  p: {source: publish, publish_key: long-enough-1}", "ingest.srt.passphrase: ingest.srt.auto_create beyond loopback"),
        ("ingest:\n  rtmp: {listen: \"127.0.0.1:1935\"}\n  defaults: {hls: {variant: dash}}\nstreams:\n  p: {source: publish}", "ingest.defaults.hls.variant: expected mpegts"),
        ("ingest:\n  defaults: {source: x}\nstreams:\n  p: {source: publish}", "ingest.defaults.source: not allowed"),
        ("auth:\n  jwt: {jwks: \"http://idp.example/keys\"}\nstreams:\n  c: {source: testsrc://}", "auth.jwt.jwks: http:// is for loopback only"),
        ("streams:\n  c: {source: testsrc://, record: {path: /tmp/r, max_bytes: lots}}", "streams.c.record.max_bytes: expected a size such as 500MB"),
        ("streams:\n  c: {source: testsrc://, record: {path: /tmp/r, keep: forever}}", "streams.c.record.keep: expected a duration"),
        ("auth:\n  jwt: {jwks: keys.json, refresh: 1m}\nstreams:\n  c: {source: testsrc://}", "auth.jwt.refresh: for a JWKS URL only"),
        ("auth:\n  jwt: {jwks: \"https://idp.example/keys\", refresh: 0s}\nstreams:\n  c: {source: testsrc://}", "auth.jwt.refresh: expected a duration"),
        ("streams:\n  c: {source: testsrc://, on_demand_idle: 5s}", "streams.c.on_demand_idle: needs on_demand: true"),
        ("streams:\n  p: {source: publish, on_demand: true}", "streams.p.on_demand: a publish stream"),
        ("streams:\n  c: {source: testsrc://, h264_fallback: maybe}", "streams.c.h264_fallback: expected true or false"),
        ("streams:\n  c: {source: testsrc://, h264_fallback: {height: 360}}", "streams.c.h264_fallback.height: unknown key"),
        ("streams:\n  c: {source: testsrc://, h264_fallback: {bitrate: 1}}", "streams.c.h264_fallback.bitrate: expected a bit rate"),
        ("streams:\n  c: {source: testsrc://, renditions: [{name: h264, height: 180, bitrate: 300k}], h264_fallback: true}",
         "streams.c.h264_fallback: a rendition is named \"h264\" already"),
        ("streams:\n  c: {source: testsrc://, substream: {source: \"rtsp://h/2\", transport: carrier}}", "streams.c.substream.transport: expected"),
        ("streams:\n  c: {source: testsrc://, substream: {url: \"rtsp://h/2\"}}", "streams.c.substream.url: unknown key"),
        ("streams:\n  c: {source: testsrc://, substream: {transport: tcp}}", "streams.c.substream.source: missing"),
        ("streams:\n  c: {source: testsrc://, substream: \"gopher://h/2\"}", "streams.c.substream: unsupported scheme"),
        ("streams:\n  c: {source: testsrc://, substream: clip.mp4}", "streams.c.substream: a sub stream is a camera's live stream"),
        ("streams:\n  c: {source: \"rtsp://h/1\", talk: loud}", "streams.c.talk: expected"),
        ("talk: {max_duration: 0}\nstreams:\n  c: {source: testsrc://}", "talk.max_duration:"),
        ("talk: {max_seconds: 5}\nstreams:\n  c: {source: testsrc://}", "talk.max_seconds: unknown key"),
        ("streams:\n  c: {source: testsrc://, substream: onvif}", "streams.c.substream: \"onvif\" takes the sub profile of an onvif:// source"),
        ("streams:\n  c: {source: testsrc://, renditions: [{name: sub, height: 180, bitrate: 300k}], substream: \"rtsp://h/2\"}",
         "streams.c.substream: a rendition is named \"sub\" already"),
        ("ingest:\n  rtmp: {listen: \"127.0.0.1:1935\"}\nstreams:\n  p: {source: publish, substream: \"rtsp://h/2\"}", "streams.p.substream: a publish stream"),
    ])
    func errorsNameTheKey(yaml: String, expected: String) {
        do {
            _ = try Configuration.parse(yaml, file: "bad.yaml", sources: TestSources.opener)
            Issue.record("accepted")
        } catch {
            #expect(error.description.hasPrefix("bad.yaml: "))
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    /// `h264_fallback`: a rendition at the source's size, its bit rate chosen from it (or given),
    /// served as `NAME_h264`; `false` or absent: none.
    @Test func theH264FallbackIsARenditionAtTheSourcesSize() throws {
        let c = try Configuration.parse("""
        streams:
          a: {source: testsrc://, h264_fallback: true, renditions: [{name: 180p, height: 180, bitrate: 300k}]}
          b: {source: testsrc://, h264_fallback: {bitrate: 2M, encoder: software}}
          c: {source: testsrc://, h264_fallback: false}
        """, sources: TestSources.opener)
        let a = try #require(c.streams.first { $0.name == "a" }), b = try #require(c.streams.first { $0.name == "b" })
        let fallback = try #require(a.renditions.last)
        #expect(fallback.name == "h264" && fallback.isFallback && !a.renditions[0].isFallback)
        #expect(fallback.height(source: 721) == 720 && a.renditions[0].height(source: 721) == 180)
        #expect(fallback.bitrate(width: 640, height: 360, fps: 30) == 691 && fallback.bitrate(width: 64, height: 64, fps: 5) == 300)
        #expect(b.renditions.first?.bitrate(width: 640, height: 360, fps: 30) == 2000 && b.renditions.first.map { "\($0.encoder)" } == "software")
        #expect(c.streams.first { $0.name == "c" }?.renditions.isEmpty == true)
        #expect(a.expanded().map(\.name) == ["a", "a_180p", "a_h264"])
    }

    /// `substream`: the camera's second stream, served as `NAME_sub`, read on demand with its
    /// own transport, belonging to its stream; an `onvif://` source has one (its sub profile)
    /// unless told `false`; its credentials are secrets like the source's.
    @Test func aSubstreamIsAStreamOfItsOwnThatBelongsToItsCamera() throws {
        let c = try Configuration.parse("""
        streams:
          a: {source: "rtsp://u:main-pw@cam/1", transport: udp, substream: {source: "rtsp://u:sub-pw@cam/2", transport: tcp}, record: {path: /tmp/r}}
          b: {source: "rtsp://cam/1", substream: "rtsp://cam/2"}
          o: {source: "onvif://admin:onvif-pw@10.0.0.9:8080/main"}
          p: {source: "onvif://admin:onvif-pw@10.0.0.9:8080", substream: false}
          q: {source: "onvif://admin:onvif-pw@10.0.0.9", substream: onvif, transport: tcp}
        """, sources: TestSources.opener)
        func stream(_ n: String) throws -> Configuration.Stream { try #require(c.streams.first { $0.name == n }) }
        let a = try stream("a").expanded()
        #expect(a.map(\.name) == ["a", "a_sub"])
        let sub = a[1]
        #expect(sub.source == "rtsp://u:sub-pw@cam/2" && sub.sourceOptions.transport == .tcp && a[0].sourceOptions.transport == .udp)
        #expect(sub.partOf == "a" && sub.isSubstream && sub.onDemandIdle == 10)
        #expect(sub.record == nil && sub.preview == nil && sub.hls == nil && sub.forward.isEmpty)
        #expect(try stream("a").secrets.contains("sub-pw"))
        #expect(try stream("b").expanded()[1].sourceOptions.transport == .auto)
        #expect(try stream("o").expanded().map(\.source) == ["onvif://admin:onvif-pw@10.0.0.9:8080/main", "onvif+sub://admin:onvif-pw@10.0.0.9:8080/main"])
        #expect(try stream("p").expanded().count == 1)
        let q = try stream("q").expanded()
        #expect(q.map(\.name) == ["q", "q_sub"] && q[1].source == "onvif+sub://admin:onvif-pw@10.0.0.9" && q[1].sourceOptions.transport == .tcp)
        #expect(TestSources.opener.validate(url: q[1].source) == nil)
        #expect(TestSources.opener.validate(url: "onvif+sub://") != nil)
    }

    /// `talk: true` asks the camera for its backchannel on the main stream's session only (not
    /// its sub stream's); `talk.max_duration` bounds every talk.
    @Test func talkAsksTheMainStreamForItsBackchannel() throws {
        let c = try Configuration.parse("""
        talk: {max_duration: 30}
        streams:
          door: {source: "rtsp://cam/1", substream: "rtsp://cam/2", talk: true}
          gate: {source: "rtsp://cam/3"}
        """, sources: TestSources.opener)
        let door = try #require(c.streams.first { $0.name == "door" }).expanded()
        #expect(door[0].sourceOptions.backchannel && !door[1].sourceOptions.backchannel)
        #expect(c.streams.first { $0.name == "gate" }?.sourceOptions.backchannel == false)
        #expect(c.talkMaxDuration == 30 && Configuration().talkMaxDuration == 120)
    }

    @Test func aPublishPortBeyondLoopbackIsOpenedByKeys() throws {
        let c = try Configuration.parse("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\"}\nstreams:\n  p: {source: publish, publish_key: k1}\n  q: {source: publish, publish_key: k2}",
                                        sources: TestSources.opener)
        #expect(c.publishStreams.map(\.source) == ["publish://p", "publish://q"])
        #expect(c.streams.first?.publishKey == "k1")
        _ = try Configuration.parse("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\", publish_key: g}\nstreams:\n  p: {source: publish}", sources: TestSources.opener)
    }

    @Test func aServerBeyondLoopbackNeedsAnAuthSection() throws {
        var c = try Configuration.parse("server:\n  listen: 0.0.0.0:8080\nstreams:\n  c:\n    source: testsrc://", sources: TestSources.opener)
        #expect(throws: ConfigError.self) { try c.validateExposure(file: "x") }
        c.auth = AuthSettings()
        try c.validateExposure(file: "x")
        #expect(c.effectiveAllowedHosts == nil)
        c.listenHost = "127.0.0.1"
        #expect(c.effectiveAllowedHosts == ["localhost", "127.0.0.1", "::1"])
    }

    @Test func webRTCsTCPPortIsOnByDefaultAndNamedWhenMalformed() throws {
        let base = "streams:\n  c:\n    source: testsrc://\n"
        #expect(try Configuration.parse(base, sources: TestSources.opener).webrtc?.tcpPort == 0)
        #expect(try Configuration.parse("server:\n  webrtc: {tcp: off}\n" + base, sources: TestSources.opener).webrtc?.tcpPort == nil)
        #expect(try Configuration.parse("server:\n  webrtc: {tcp: 8189}\n" + base, sources: TestSources.opener).webrtc?.tcpPort == 8189)
        #expect(try Configuration.parse("server:\n  webrtc: {tcp: on}\n" + base, sources: TestSources.opener).webrtc?.tcpPort == 0)
        do {
            _ = try Configuration.parse("server:\n  webrtc: {tcp: 70000}\n" + base, sources: TestSources.opener)
            Issue.record("a port past 65535 was taken")
        } catch {
            #expect("\(error)".contains("server.webrtc.tcp"), "\(error)")
        }
        // STUN and TURN servers: a TURN server needs credentials or coturn's secret; the secret
        // is never repeated in an error.
        let turn = try Configuration.parse("server:\n  webrtc:\n    ice_servers:\n      - {urls: [\"stun:stun.example.net:3478\"]}\n      - {urls: \"turn:turn.example.net:3478?transport=udp\", secret: \"0123456789abcdefXYZ\", ttl: 10m}\n" + base,
                                           sources: TestSources.opener)
        #expect(turn.webrtc?.iceServers == [ICEServer(urls: ["stun:stun.example.net:3478"]),
                                          ICEServer(urls: ["turn:turn.example.net:3478?transport=udp"], secret: "0123456789abcdefXYZ", ttl: 600)])
        for (yaml, key) in [("- {urls: [\"http://x\"]}", "server.webrtc.ice_servers[0].urls"),
                            ("- {urls: [\"turn:t:3478\"]}", "server.webrtc.ice_servers[0]"),
                            ("- {urls: [\"turn:t:3478\"], secret: short}", "server.webrtc.ice_servers[0].secret"),
                            ("- {urls: [\"turn:t:3478\"], secret: \"0123456789abcdefXYZ\", username: u, credential: c}", "server.webrtc.ice_servers[0]"),
                            ("{urls: x}", "server.webrtc.ice_servers")] {
            do {
                _ = try Configuration.parse("server:\n  webrtc:\n    ice_servers:\n      \(yaml)\n" + base, sources: TestSources.opener)
                Issue.record("taken: \(yaml)")
            } catch {
                let path = error.path
                #expect(path == key, "\(error)")
                #expect(!"\(error)".contains("0123456789abcdefXYZ"))
            }
        }
    }

    @Test func globsMatchStreamNames() {
        #expect(Glob.matches("bodycam-*", "bodycam-12"))
        #expect(!Glob.matches("bodycam-*", "lobby"))
        #expect(Glob.matches("cam-?", "cam-1") && !Glob.matches("cam-?", "cam-10"))
        #expect(Glob.matches("*", "") && Glob.matches("a*b*c", "axxbyyc") && !Glob.matches("a*b*c", "axxbyy"))
        let p = AccessPermission(action: .read, streams: "cam-*")
        #expect(p.grants(.read, stream: "cam-2") && !p.grants(.read, stream: "lobby") && !p.grants(.admin, stream: "cam-2"))
    }

    @Test func pushSourcesOnLoopbackOrWithAPassphraseAreAccepted() throws {
        for source in ["rtmp://127.0.0.1:1935/live/phone", "\"srt://0.0.0.0:9000?mode=listener&passphrase=long-enough-1\"", "rtsp://[::1]:8554/cam"] {
            _ = try Configuration.parse("streams:\n  p:\n    source: \(source)\n    listen: true", sources: TestSources.opener)
        }
        _ = try Configuration.parse("streams:\n  m:\n    source: udp://239.1.1.1:5000", sources: TestSources.opener)
        _ = try Configuration.parse("streams:\n  m:\n    source: rtsp://10.0.0.5/cam", sources: TestSources.opener) // pulled, not pushed
    }
}
