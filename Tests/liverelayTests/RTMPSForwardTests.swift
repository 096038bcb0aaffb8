import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// Forwards to RTMPS as platforms take it (nginx-rtmp behind stunnel, both Debian's): the
/// server's certificate is checked, so a self-signed one is refused unless pinned with
/// `ca_file`; a pinned forward goes live, is read back with every stamped picture, and comes
/// back by itself after the endpoint restarts. State, reconnects and bytes are in the API and
/// `/metrics`; the stream key is in neither.
@Suite(.ownThreads, .serialized) struct RTMPSForwardTests {
    /// The stamped pictures `liverelay probe` reads from nginx-rtmp's copy of `stream`, trying
    /// until `deadline` (nginx-rtmp answers a reader once a keyframe has come).
    static func readBack(_ nginx: Servers.NginxRTMP, _ stream: String, deadline: Double = 20) throws -> RTSPServeTests.Probed {
        let end = Date().addingTimeInterval(deadline)
        var last = RTSPServeTests.Probed(report: nil, said: "not tried")
        repeat {
            let r = try ChildProcess.run(Paths.liverelay, ["probe", nginx.url(stream), "--frames", "30", "--json"], timeout: 30)
            last = RTSPServeTests.Probed(report: try? Servers.decode(ProbeReport.self, r.stdout), said: r.stderr)
            if last.report?.stampsRead == 30 { return last }
        } while Date() < end
        return last
    }

    static func forwards(_ port: Int) throws -> [ForwardStatus] {
        try Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam").forwards
    }

    @Test func aPinnedCertificateGoesLiveAndComesBackAfterARestartAnUncheckedOneNever() throws {
        let dir = Paths.tempDirectory("rtmps")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cert, key) = try Servers.selfSignedCertificate(in: dir)
        let nginx = try Servers.NginxRTMP()
        var tls: Servers.Stunnel? = try Servers.Stunnel(backend: nginx.port, cert: cert, key: key)
        let tlsPort = tls!.port
        let streamKey = "sk_live_9876543210fedcba"
        let (serve, port, serveDir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
            forward:
              - {url: "rtmps://127.0.0.1:\(tlsPort)/live/\(streamKey)", ca_file: "\(cert)"}
              - "rtmps://127.0.0.1:\(tlsPort)/live/unchecked"
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: serveDir) }

        let first = try Self.readBack(nginx, streamKey)
        #expect(first.report?.stampsRead == 30 && first.report?.width == 320, "through RTMPS: \(first)")
        var f = try Self.forwards(port)
        #expect(f.count == 2 && f[0].state == .running && f[0].bytesSent > 10_000 && f[0].bitrate > 10_000, "\(f)")
        // Not pinned: the self-signed certificate is not the system's, the handshake fails,
        // and nothing reaches nginx.
        #expect(f[1].state == .reconnecting && f[1].connections == 0 && f[1].lastError != nil, "\(f)")
        let unchecked = try ChildProcess.run(Paths.liverelay, ["probe", nginx.url("unchecked"), "--frames", "5", "--json"], timeout: 30)
        #expect((try? Servers.decode(ProbeReport.self, unchecked.stdout))?.framesDecoded ?? 0 == 0, "the unchecked forward got through")

        // The endpoint restarts on the same port: the pinned forward reconnects by itself.
        tls = nil
        let away = Date().addingTimeInterval(15)
        repeat { usleep(300_000); f = try Self.forwards(port) } while Date() < away && f[0].state == .running
        #expect(f[0].state == .reconnecting, "\(f[0])")
        tls = try Servers.Stunnel(backend: nginx.port, cert: cert, key: key, port: tlsPort)
        let again = try Self.readBack(nginx, streamKey, deadline: 30)
        #expect(again.report?.stampsRead == 30, "after the restart: \(again)")
        f = try Self.forwards(port)
        #expect(f[0].state == .running && f[0].connections >= 2 && f[0].reconnects >= 1, "\(f[0])")

        let metrics = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"], timeout: 10).stdout
        #expect(MetricsText.sum(metrics, "liverelay_forward_up", ["sink": "forward0"]) == 1)
        #expect(MetricsText.sum(metrics, "liverelay_forward_up", ["sink": "forward1"]) == 0)
        #expect(MetricsText.sum(metrics, "liverelay_forward_reconnects_total", ["sink": "forward0"]) >= 1)
        #expect(MetricsText.sum(metrics, "liverelay_forward_bytes_total", ["sink": "forward0"]) > 10_000)
        let api = try ChildProcess.run("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/streams/cam"], timeout: 10).stdout
        #expect(!api.contains(streamKey) && !metrics.contains(streamKey) && !serve.stderr.contains(streamKey) && !serve.stdout.contains(streamKey))
    }
}
