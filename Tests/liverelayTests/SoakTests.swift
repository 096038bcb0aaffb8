import Testing
import Foundation
import TestSupport
import Bench

/// The compressed soak of the fault matrix: sixteen streams (the test source, previews and
/// classic HLS) while viewers join and leave every second for 75 seconds — an MJPEG viewer
/// for 1.5 s, a snapshot, a player's playlist and newest segment. After the warm-up, the
/// server's memory, descriptors and threads stay flat. (`liverelay bench faults --soak 1800`
/// runs the same for 30 minutes.)
@Suite(.ownThreads, .tags(.exclusive)) struct SoakTests {
    @Test func sixteenStreamsWithViewersComingAndGoingStayFlat() throws {
        let work = Paths.tempDirectory("soak")
        defer { try? FileManager.default.removeItem(at: work) }
        let samples = try FaultsBenchmark.soak(me: Paths.liverelay, streams: 16, seconds: 75, work: work.path)
        // Warm once the HLS windows and their retired segments have filled (~30 s).
        let warm = try #require(samples.first { $0.seconds >= 40 })
        let last = try #require(samples.last)
        let table = samples.map { String(format: "%.0f s: %.1f MiB, %d fds, %d threads, %@", $0.seconds, $0.resources.rssMiB, $0.resources.fds, $0.resources.threads, $0.resources.state) }
        print("SoakTests: " + table.joined(separator: "; ") + "; \(last.requests) requests")
        // Each second a viewer, a snapshot, a playlist and, once HLS has one, the newest segment:
        // 225 requests in 75 s without segments, 300 with them all.
        #expect(last.requests > 250, "the viewers did not get through: \(last.requests) requests")
        #expect(last.resources.rssMiB <= warm.resources.rssMiB * 1.1 + 8, "memory grew: \(table)")
        #expect(last.resources.fds <= warm.resources.fds + 8, "descriptors grew: \(table)")
        #expect(last.resources.threads <= warm.resources.threads + 4, "threads grew: \(table)")
    }
}
