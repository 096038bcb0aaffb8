import Testing
import Foundation
import TestSupport
import Bench
import RelayAPI
import Relay

/// A camera's main and sub streams on the ops wall (headless Chromium): small tiles play the
/// sub stream, read only while a tile uses it; the selected tile switches to the main stream at
/// its next keyframe with no gap and no blank picture (the stamps of every picture read back);
/// a tile whose sub stream fails plays the main stream and says why.
@Suite(.ownThreads, .serialized) struct WallSubstreamTests {
    /// The steps' evals: before the selection, then after it.
    struct Before: Decodable { var rendition: String; var why: String; var at: Double }
    struct After: Decodable {
        struct Dead: Decodable { var why: String; var rendition: String; var painted: Int }
        var rendition: String
        /// [frame, capture ms, painted ms, picture width] for every stamped picture painted.
        var log: [[Double]]
        var unstamped: Int
        var dead: Dead
    }
    struct Report: Decodable { var evals: [String] }

    /// Exclusive: it measures the switch's timing and gap, which other tests' load would move.
    @Test(.tags(.exclusive)) func smallTilesPlayTheSubStreamAndTheSelectedTileTheMainOneWithoutAGap() throws {
        let nobody = FreePort.tcp()
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30"
            substream: "testsrc://?size=320x180&fps=30&gop=30"
            preview: false
          dead:
            source: "testsrc://?size=640x360&fps=15&gop=15"
            substream: {source: "rtsp://127.0.0.1:\(nobody)/stream2", transport: tcp, open_timeout: 1s}
            preview: false
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        func state(_ name: String) -> String? { Servers.apiIfAny(StreamView.self, "http://127.0.0.1:\(port)/api/streams/\(name)", maxTime: 8)?.stream.state.rawValue }
        #expect(HostileCameraTests.waitLive(port, "cam", timeout: 20))
        // Nothing uses the sub stream yet: it is not read.
        #expect(state("cam_sub") == "idle")

        let tile = "wall.tiles.cam"
        let steps = "sleep:5;eval:JSON.stringify({rendition: \(tile).rendition, why: \(tile).why, at: Date.now()});key:1;sleep:4;"
            + "eval:JSON.stringify({rendition: \(tile).rendition, log: \(tile).stampLog, unstamped: \(tile).unstamped || 0, "
            + "dead: {why: wall.tiles.dead.why, rendition: wall.tiles.dead.rendition, painted: wall.tiles.dead.painted}})"
        let browser = try ChildProcess(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/?measure=cam",
                                                        "--steps", steps, "--keys-after", "1", "--seconds", "1", "--size", "1700x1300"])
        defer { browser.stop() }
        // While a tile plays it, the sub stream is read.
        var subLive = false
        for _ in 0..<60 where !subLive {
            usleep(100_000)
            subLive = state("cam_sub") == "live"
        }
        #expect(subLive, "the sub stream was not read while a tile played it")
        #expect(browser.wait(timeout: 90))
        let line = try #require(browser.stdout.split(separator: "\n").last { $0.hasPrefix("{") }, "\(browser.stdout.suffix(800)) \(browser.stderr.suffix(800))")
        let evals = try #require(try? JSONDecoder().decode(Report.self, from: Data(line.utf8)).evals, "\(line.prefix(1500))")
        try #require(evals.count == 2, "\(evals)")
        let before = try JSONDecoder().decode(Before.self, from: Data(evals[0].utf8))
        let after = try JSONDecoder().decode(After.self, from: Data(evals[1].utf8))

        // A tile about 186 px tall plays the 320x180 sub stream and says so; selected, the main.
        #expect(before.rendition.hasPrefix("sub stream") && before.why.contains("the camera's sub stream"), "\(before)")
        #expect(after.rendition == "", "the selected tile still plays \(after.rendition)")
        let sub = after.log.filter { $0.count == 4 && $0[3] == 320 }, main = after.log.filter { $0.count == 4 && $0[3] == 640 }
        #expect(sub.count > 60 && main.count > 30, "\(sub.count) sub and \(main.count) main pictures")
        // The switch: sub pictures until the main stream's first keyframe (within a GOP, 1 s,
        // of the key press), then main pictures only, with no gap between them and every
        // picture painted carrying its stamp (no blank one).
        let lastSub = try #require(sub.last), firstMain = try #require(main.first)
        #expect(firstMain[2] - before.at < 1_600, "first main picture \(firstMain[2] - before.at) ms after the selection")
        #expect(firstMain[2] - lastSub[2] < 250, "a gap of \(firstMain[2] - lastSub[2]) ms between the last sub and the first main picture")
        #expect(!after.log.contains { $0.count == 4 && $0[3] == 320 && $0[2] > firstMain[2] }, "a sub picture after the main stream took over")
        #expect(after.unstamped == 0, "\(after.unstamped) pictures painted without a stamp")
        // Both streams are stamped by one clock: the main stream is no later than the sub.
        let mainLatency = main.map { $0[2] - $0[1] }.sorted()[main.count / 2]
        #expect(mainLatency < 500, "main stream \(mainLatency) ms behind")

        // The tile whose sub stream cannot be reached plays the main stream and says why.
        #expect(after.dead.rendition == "" && after.dead.painted > 10 && after.dead.why.contains("the sub stream failed"), "\(after.dead)")
    }
}
