import Testing
import TestSupport
import Foundation
import Relay

/// Retention's plan: oldest first, by age and by size, never inside a hold.
@Suite(.ownThreads, .tags(.fast)) struct RetentionTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static func segments(_ n: Int) -> [RecordedSegment] {
        (0..<n).map { RecordedSegment(stream: "cam", path: "/r/cam-\($0).mp4", start: t0.addingTimeInterval(Double($0) * 60), duration: 60,
                                      bytes: 100, codecs: "h264", sha256: "x") }
    }

    @Test func byAgeOldestFirst() {
        let now = Self.t0.addingTimeInterval(10 * 60)
        // Ten one-minute files; kept for 5 minutes: those that ended more than 5 minutes ago go.
        let gone = RetentionPruner.plan(Self.segments(10), holds: [], keep: 300, maxBytes: nil, now: now)
        #expect(gone.map(\.path) == (0..<4).map { "/r/cam-\($0).mp4" })
    }

    @Test func bySizeOldestFirstSkippingHolds() {
        let hold = RecordingHold(stream: "cam", start: Self.t0.addingTimeInterval(30), end: Self.t0.addingTimeInterval(90), reason: "case 7")
        // 1000 bytes in ten files, 550 allowed: five go, but the two the hold covers stay, so the
        // next ones go in their place.
        let gone = RetentionPruner.plan(Self.segments(10), holds: [hold], keep: nil, maxBytes: 550, now: Self.t0)
        #expect(gone.map(\.path) == [2, 3, 4, 5, 6].map { "/r/cam-\($0).mp4" })
        #expect(RetentionPruner.plan(Self.segments(3), holds: [], keep: nil, maxBytes: 1000, now: Self.t0).isEmpty)
    }
}
