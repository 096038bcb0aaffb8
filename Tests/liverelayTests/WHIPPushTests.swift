import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// A forward to a WHIP endpoint: one LiveRelay pushes its camera over WebRTC to a second
/// LiveRelay's WHIP ingest, with the stream's key as its bearer token; the second serves it on,
/// and its RTSP out gives back every stamped picture. A wrong token is refused (401, said in the
/// forward's status); the endpoint going away and coming back on its port is reconnected to.
@Suite(.ownThreads, .serialized) struct WHIPPushTests {
    static let key = "whip-push-key-2026"

    static func receiver(listen: Int = 0) throws -> (serve: ChildProcess, http: Int, rtsp: Int, dir: URL) {
        let (serve, port, dir) = try Servers.serve("""
        server:
          rtsp: {listen: "127.0.0.1:0"}
        streams:
          in: {source: publish, publish_key: "\(key)", preview: false}
        """, listen: listen)
        guard let rtsp = serve.listeningPort("RTSP server listening on", timeout: 30) else {
            serve.stop()
            throw Servers.ServerError("no RTSP server: \(serve.stderr.suffix(500))")
        }
        return (serve, port, rtsp, dir)
    }

    static func forwards(_ port: Int) throws -> [ForwardStatus] {
        try Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam").forwards
    }

    static func waitLive(_ port: Int, _ stream: String, timeout: Double = 20) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if Servers.apiIfAny(StreamView.self, "http://127.0.0.1:\(port)/api/streams/\(stream)")?.stream.state == .live { return true }
            usleep(250_000)
        }
        return false
    }

    @Test func aForwardPushesToAnotherRelaysWHIPEndpointAndComesBack() throws {
        var receiver: (serve: ChildProcess, http: Int, rtsp: Int, dir: URL)? = try Self.receiver()
        let whipPort = receiver!.http
        defer { receiver?.serve.stop(); if let d = receiver?.dir { try? FileManager.default.removeItem(at: d) } }
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
            forward:
              - {url: "whip+http://127.0.0.1:\(whipPort)/streams/in/whip", bearer_token: "\(Self.key)"}
              - {url: "whip+http://127.0.0.1:\(whipPort)/streams/in/whip", bearer_token: "wrong-token"}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(Self.waitLive(whipPort, "in"), "the push did not go live: \(serve.stderr.suffix(800))")
        let probe = try ChildProcess.run(Paths.liverelay, ["probe", "rtsp://127.0.0.1:\(receiver!.rtsp)/in", "--transport", "tcp", "--frames", "60", "--json"], timeout: 40)
        let report = try? Servers.decode(ProbeReport.self, probe.stdout)
        #expect(report?.stampsRead == 60 && report?.width == 320, "read back: \(probe.output.suffix(400))")
        var f = try Self.forwards(port)
        #expect(f.count == 2 && f[0].state == .running && f[0].connections == 1 && f[0].bytesSent > 10_000, "\(f)")
        #expect(f[1].state == .reconnecting && f[1].connections == 0 && (f[1].lastError ?? "").contains("401"), "\(f)")

        // The endpoint goes away and comes back on its port: the push follows.
        receiver?.serve.stop()
        let away = Date().addingTimeInterval(20)
        repeat { usleep(300_000); f = try Self.forwards(port) } while Date() < away && f[0].state == .running
        #expect(f[0].state == .reconnecting, "\(f[0])")
        receiver = try Self.receiver(listen: whipPort)
        #expect(Self.waitLive(whipPort, "in", timeout: 30), "the push did not come back: \(serve.stderr.suffix(800))")
        f = try Self.forwards(port)
        #expect(f[0].state == .running && f[0].connections >= 2, "\(f[0])")
        #expect(!serve.stderr.contains(Self.key) && !serve.stdout.contains(Self.key), "the token reached the log")
    }

    /// A forward from a network that blocks UDP: the pushing LiveRelay in a network namespace of
    /// its own, every UDP packet from it dropped, tries the answer's UDP candidate, then goes
    /// live over its passive TCP one (ICE-TCP, RFC 6544, RFC 4571 framing), and every stamped
    /// picture comes back from the receiver. (Without ICE-TCP it stays "no answer to ICE checks".)
    @Test(.enabled(if: getuid() == 0, "needs root for a network namespace and iptables"))
    func aForwardWhoseUDPIsBlockedGoesLiveOverICETCP() throws {
        let lab = try NetworkNamespace(tag: "ptcp", net: 218)
        defer { lab.tearDown() }
        let dir = Paths.tempDirectory("serve")
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
        auth:
          anonymous: [read]
        server:
          rtsp: {listen: "127.0.0.1:0"}
          webrtc: {listen: "\(lab.hostAddress):0"}
        streams:
          in: {source: publish, publish_key: "\(Self.key)", preview: false}
        """.write(to: dir.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
        let whipPort = FreePort.tcp()
        let receiver = try ChildProcess(Paths.liverelay, ["serve", "--config", dir.appendingPathComponent("config.yaml").path,
                                                          "--listen", "\(lab.hostAddress):\(whipPort)", "--state-dir", dir.path, "--verbose"])
        defer { receiver.stop() }
        let rtsp = try #require(receiver.listeningPort("RTSP server listening on", timeout: 30), "\(receiver.stderr.suffix(400))")
        #expect(receiver.stdout.contains("ICE-TCP on tcp://\(lab.hostAddress):"), "\(receiver.stdout.prefix(600))")
        try lab.addInputRule(["-p", "udp", "-j", "DROP"])
        let (pusher, _, pusherDir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
            forward:
              - {url: "whip+http://\(lab.hostAddress):\(whipPort)/streams/in/whip", bearer_token: "\(Self.key)"}
        """, arguments: ["--verbose"], namespace: lab.name)
        defer { pusher.stop(); try? FileManager.default.removeItem(at: pusherDir) }
        let end = Date().addingTimeInterval(30)
        var live = false
        while !live && Date() < end {
            live = Servers.apiIfAny(StreamView.self, "http://\(lab.hostAddress):\(whipPort)/api/streams/in")?.stream.state == .live
            if !live { usleep(250_000) }
        }
        let log = { pusher.stdout + pusher.stderr }
        #expect(live, "the push did not go live: \(log().suffix(1200))")
        let probe = try ChildProcess.run(Paths.liverelay, ["probe", "rtsp://127.0.0.1:\(rtsp)/in", "--transport", "tcp", "--frames", "60", "--json"], timeout: 40)
        let report = try? Servers.decode(ProbeReport.self, probe.stdout)
        #expect(report?.stampsRead == 60 && report?.width == 320, "read back: \(probe.output.suffix(400))")
        // Over TCP, both sides say so; UDP was tried first and never answered.
        let line = { (log: String, what: String) in log.split(separator: "\n").contains { $0.contains(what) && $0.contains("over=tcp") } }
        #expect(line(log(), "WHIP session up"), "\(log().suffix(1500))")
        let received = receiver.stdout + receiver.stderr
        #expect(line(received, "webrtc: publisher connected"), "\(received.suffix(1500))")
    }
}
