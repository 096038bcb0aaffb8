import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI

/// A camera across a real link (its own network namespace, a veth pair) whose UDP media stops
/// mid-session while its RTSP port still answers — a NAT that dropped its UDP mappings: with
/// `transport: auto` the stream comes back over TCP at the next reconnect, without first waiting
/// for UDP again, and says so in the API.
@Suite(.ownThreads, .serialized) struct UDPStopTests {
    /// `cam`'s status as the API shows it; nil when nothing (or not a stream) answers.
    static func status(_ port: Int) -> StreamStatus? {
        Servers.apiIfAny(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam", maxTime: 2)?.stream
    }

    @Test(.enabled(if: getuid() == 0, "needs root for a network namespace and iptables"))
    func udpThatStopsMidSessionMovesTheSourceToTCP() throws {
        let lab = try NetworkNamespace(tag: "udp", net: 214)
        defer { lab.tearDown() }
        let camAddress = lab.address
        let camPort = FreePort.tcp()
        let (ipCmd, camArgs) = lab.command(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/rtsp_server.py").path,
                                                            "--port", String(camPort), "--address", camAddress])
        let camera = try ChildProcess(ipCmd, camArgs)
        defer { camera.stop() }
        try #require(camera.waitFor("ready", timeout: 15), "\(camera.stderr)")
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam:
            source: rtsp://\(camAddress):\(camPort)/test
            read_timeout: 2s
            open_timeout: 6s
            preview: false
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        var s: StreamStatus?
        var end = Date().addingTimeInterval(15)
        while Date() < end {
            s = Self.status(port)
            if s?.state == .live && (s?.fpsIn ?? 0) > 20 { break }
            usleep(200_000)
        }
        try #require(s?.state == .live, "\(String(describing: s))")
        #expect(s?.transportFallback == nil, "\(String(describing: s))")

        // The UDP path breaks; RTSP (TCP) still answers.
        try lab.addInputRule(["-p", "udp", "-j", "DROP"])
        let cut = Date()
        usleep(500_000)
        end = Date().addingTimeInterval(20)
        var back: Double?
        while Date() < end {
            s = Self.status(port)
            if s?.state == .live && s?.transportFallback == "tcp" && (s?.connections ?? 0) >= 2 {
                back = Date().timeIntervalSince(cut)
                break
            }
            usleep(200_000)
        }
        // The read timeout (2 s) notices, the reconnect goes straight to TCP (the API's
        // transport_fallback says so: without the switch it stays unset and this fails); the time
        // is the read timeout, the backoff, the TCP open and a keyframe (5.0 s in a CI-like run).
        #expect(back != nil && back! < 10, "back after \(back ?? -1) s: \(String(describing: s))")
        print("UDPStopTests: live again over TCP \(String(format: "%.1f", back ?? -1)) s after the UDP path broke (read_timeout 2 s)")
        usleep(2_000_000)
        #expect((Self.status(port)?.fpsIn ?? 0) > 20, "no pictures over TCP")
        #expect(serve.stderr.contains("reconnecting over TCP"))
    }
}
