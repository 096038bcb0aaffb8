import Testing
import Foundation
import TestSupport
import Bench

/// LL-HLS through a standard cache: Debian's nginx with the shipped dist/nginx/liverelay-edge.conf
/// in front of a LiveRelay origin. hls.js in Chromium plays through it as fresh as directly, and
/// a hundred simulated LL-HLS players cost the origin about one request per part and per blocking
/// playlist answer. Signed URLs pass through the cache.
@Suite(.ownThreads, .serialized) struct EdgeCacheTests {
    /// scripts/llhls_viewers.py's JSON line: the fields these tests read.
    struct ViewersResult: Decodable {
        var viewers: Int?
        var parts: Int?
        var playlists: Int?
        var errors: Int?
        var partsPerSecondP10: Double?

        enum CodingKeys: String, CodingKey {
            case viewers, parts, playlists, errors
            case partsPerSecondP10 = "parts_per_second_p10"
        }
    }

    static func browser(_ url: String) throws -> BrowserReport {
        let r = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, url,
                                                          "--stamps", "video", "--seconds", "8", "--timeout", "30"], timeout: 90)
        return (try? BrowserReport.decode(r.stdout)) ?? BrowserReport(error: r.stdout + r.stderr)
    }

    @Test func llhlsThroughAnNginxEdgeReachesTheOriginAboutOncePerObject() throws {
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30", preview: false, hls: {variant: lowLatency, segment_duration: 1s, part_duration: 0.2s}}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let edge = try Servers.nginxEdge(origin: port)
        // The same player, through the edge and directly, one after the other.
        let viaEdge = try Self.browser(edge.url("streams/cam/watch?via=hls"))
        let direct = try Self.browser("http://127.0.0.1:\(port)/streams/cam/watch?via=hls")
        print("EdgeCacheTests: hls.js capture → screen p50 through the edge \(viaEdge.p50.map { "\($0)" } ?? "-") ms, direct \(direct.p50.map { "\($0)" } ?? "-") ms")
        // It plays through the edge, stamps read back (how fresh is a figure of `bench edge`,
        // measured alternating runs; one run here can meet an hls.js stall on a loaded machine).
        #expect((viaEdge.stamps ?? 0) > 100, "\(viaEdge)")
        #expect((direct.stamps ?? 0) > 100, "\(direct)")
        // The watch page keeps hls.js at the live edge (LiveEdgeScript, inline).
        #expect(viaEdge.hlsjs?.keptLive == true && direct.hlsjs?.keptLive == true, "\(direct)")

        // A hundred LL-HLS players through the edge.
        let before = edge.requests.count
        let r = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/llhls_viewers.py").path,
                                                          edge.url("streams/cam/hls/index.m3u8"), "--viewers", "100", "--seconds", "15"], timeout: 120)
        let load = try #require(try? JSONDecoder().decode(ViewersResult.self, from: Data(r.stdout.utf8)), "\(r.output)")
        let requests = edge.requests.dropFirst(before)
        let fromOrigin = requests.filter { $0.cache != "HIT" }
        let partURIs = Set(requests.filter { $0.uri.contains("/part") }.map(\.uri))
        let originParts = fromOrigin.filter { $0.uri.contains("/part") }.count
        let blockingURIs = Set(requests.filter { $0.uri.contains("_HLS_msn") }.map(\.uri))
        let originBlocking = fromOrigin.filter { $0.uri.contains("_HLS_msn") }.count
        print("EdgeCacheTests: \(load.viewers ?? 0) viewers, \(load.parts ?? 0) parts and \(load.playlists ?? 0) playlists fetched through the edge (\(requests.count) requests); origin saw \(fromOrigin.count): \(originParts) part requests for \(partURIs.count) parts, \(originBlocking) blocking playlist requests for \(blockingURIs.count) answers; parts/s per viewer p10 \(load.partsPerSecondP10 ?? 0)")
        #expect(partURIs.count > 50, "\(load)")
        #expect(Double(originParts) <= 2 * Double(partURIs.count), "origin part requests \(originParts) for \(partURIs.count) parts")
        #expect(Double(originBlocking) <= 2 * Double(blockingURIs.count), "origin blocking requests \(originBlocking) for \(blockingURIs.count) answers")
        #expect(requests.count > 10 * fromOrigin.count, "\(requests.count) through the edge, \(fromOrigin.count) at the origin")
        // Every player kept up with the live edge (five parts a second).
        #expect((load.partsPerSecondP10 ?? 0) > 3.5, "\(load)")
        #expect((load.errors ?? 1) <= 5, "\(load)")
    }

    @Test func signedURLsPassThroughTheEdgeAndNothingElseDoes() throws {
        let secret = "edge-signing-secret-0123456789abcdef"
        let dir = Paths.tempDirectory("signed")
        defer { try? FileManager.default.removeItem(at: dir) }
        let hash = try ChildProcess.run("/bin/sh", ["-c", "printf %s 'not-used-password' | \(Paths.liverelay) password --cost 10"], timeout: 30).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let yaml = """
        auth:
          users: [{name: admin, password: "\(hash)", permissions: [admin, read]}]
          signed_urls: {secret: "\(secret)"}
        streams:
          cam: {source: "testsrc://?size=320x180&fps=30&gop=30", preview: false, hls: {variant: lowLatency, segment_duration: 1s, part_duration: 0.2s},
                renditions: [{name: small, height: 90, bitrate: 100k}]}
          other: {source: "testsrc://?size=160x96&fps=10", preview: false, hls: {variant: lowLatency}}
        """
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        try yaml.write(to: dir.appendingPathComponent("signing.yaml"), atomically: true, encoding: .utf8)
        let edge = try Servers.nginxEdge(origin: port)
        func get(_ url: String) throws -> (code: String, body: String) {
            let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}", "--max-time", "10", url], timeout: 15)
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
        }
        let playlist = edge.url("streams/cam/hls/index.m3u8")
        #expect(try get(playlist).code == "401")
        let signed = try ChildProcess.run(Paths.liverelay, ["sign", "--config", dir.appendingPathComponent("signing.yaml").path, "--stream", "cam",
                                                            "--ttl", "300", "--url", playlist], timeout: 20).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(signed.contains("expires=") && signed.contains("signature="), "\(signed)")
        let answer = try get(signed)
        #expect(answer.code == "200", "\(answer)")
        // Every URI of the playlist carries the signature on, so the parts play through the edge too.
        let query = String(signed.split(separator: "?").last ?? "")
        let part = try #require(answer.body.split(separator: "\n").first { $0.hasPrefix("#EXT-X-PART:") }
            .flatMap { $0.split(separator: "\"").dropFirst().first }.map(String.init), "\(answer.body)")
        #expect(part.hasSuffix("?" + query), "\(part)")
        #expect(try get(edge.url("streams/cam/hls/" + part)).code == "200")
        // Another stream, a changed expiry, a changed signature, an expired URL: refused.
        #expect(try get(edge.url("streams/other/hls/index.m3u8?" + query)).code == "401")
        let expires = Int(query.split(separator: "&").first { $0.hasPrefix("expires=") }?.dropFirst(8) ?? "") ?? 0
        #expect(try get(playlist + "?" + query.replacingOccurrences(of: "expires=\(expires)", with: "expires=\(expires + 60)")).code == "401")
        #expect(try get(playlist + "?" + String(query.dropLast()) + (query.last == "0" ? "1" : "0")).code == "401")
        let old = Int(Date().timeIntervalSince1970) - 10
        let stale = "expires=\(old)&signature=" + String(repeating: "0", count: 64)
        #expect(try get(playlist + "?" + stale).code == "401")
        // A signed URL reads; it never steers.
        #expect(try get(edge.url("api/streams?" + query)).code == "401")
        // The stream's signature opens its ladder: the multivariant playlist carries it on to
        // each rendition, whose playlist it opens; another stream's does not.
        let origin = "http://127.0.0.1:\(port)/streams/"
        let master = try get(origin + "cam/hls/master.m3u8?" + query)
        #expect(master.code == "200" && master.body.contains("/streams/cam_small/hls/index.m3u8?" + query), "\(master)")
        #expect(try get(origin + "cam_small/hls/index.m3u8?" + query).code == "200")
        #expect(try get(origin + "cam_small/hls/index.m3u8").code == "401")
        let otherSigned = try ChildProcess.run(Paths.liverelay, ["sign", "--config", dir.appendingPathComponent("signing.yaml").path, "--stream", "other",
                                                                 "--ttl", "300", "--url", origin + "cam_small/hls/index.m3u8"], timeout: 20).stdout
        #expect(try get(otherSigned.trimmingCharacters(in: .whitespacesAndNewlines)).code == "401")
    }
}
