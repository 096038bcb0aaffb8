import Testing
import Foundation
import TestSupport

/// Why HTTPS matters for an ops page: over HTTP/1.1 Chromium opens six connections per host,
/// so a page of MJPEG previews shows six cameras; over HTTPS with HTTP/2 every preview is a
/// stream of one connection, and all twelve play.
@Suite(.ownThreads, .serialized, .tags(.exclusive)) struct BrowserHTTP2Tests {
    static func start(tls: (cert: String, key: String)?) throws -> (ChildProcess, Int, URL) {
        let dir = Paths.tempDirectory("wall12")
        var yaml = tls.map { "server:\n  tls: {cert: \($0.cert), key: \($0.key)}\n" } ?? ""
        yaml += "streams:\n"
        for i in 1...12 {
            yaml += "  cam\(i):\n    source: testsrc://?size=160x96&fps=10&gop=10\n    preview: {fps: 10, size: 160x96}\n"
        }
        return try Servers.serve(yaml, dir: dir)
    }

    static func livePreviews(_ url: String) throws -> (live: Int, imgs: Int, raw: String) {
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, url,
                                                      "--all-imgs", "--insecure", "--seconds", "4", "--size", "1280x900"], timeout: 60)
        let line = r.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let j = try? BrowserReport.decode(line)
        return (j?.live ?? -1, j?.imgs ?? -1, r.stdout + r.stderr)
    }

    @Test func twelvePreviewsPlayOverHTTP2AndSixOverHTTP1() throws {
        let dir = Paths.tempDirectory("wallcert")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (cert, key) = try Servers.selfSignedCertificate(in: dir)

        let (plain, port, pdir) = try Self.start(tls: nil)
        let overHTTP1 = try Self.livePreviews("http://127.0.0.1:\(port)/previews")
        plain.stop()
        try? FileManager.default.removeItem(at: pdir)

        let (secure, sport, sdir) = try Self.start(tls: (cert, key))
        defer { secure.stop(); try? FileManager.default.removeItem(at: sdir) }
        let overHTTP2 = try Self.livePreviews("https://127.0.0.1:\(sport)/previews")
        // The ops wall over HTTPS: pages over h2, its one WebSocket over an HTTP/1.1 connection
        // (ALPN), twelve tiles decoded by WebCodecs (a secure context off localhost too).
        let wall = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "https://127.0.0.1:\(sport)/",
                                                         "--wall", "--insecure", "--seconds", "5", "--size", "1400x1000"], timeout: 60)
        let line = wall.stdout.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let tiles = (try? BrowserReport.decode(line))?.wall?.tiles ?? [:]
        #expect(tiles.count == 12, "\(wall.stdout) \(wall.stderr.suffix(500))")
        for (name, t) in tiles {
            #expect(t.path == "h264" && (t.changes ?? 0) >= 3, "tile \(name) over HTTPS: \(t)")
        }

        #expect(overHTTP1.imgs == 12 && overHTTP1.live == 6, "HTTP/1.1: \(overHTTP1.raw)")
        #expect(overHTTP2.imgs == 12 && overHTTP2.live == 12, "HTTPS + HTTP/2: \(overHTTP2.raw)")
    }
}
