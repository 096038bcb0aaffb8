import Testing
import TestSupport
import Foundation
import MediaCore
@testable import Relay

/// What hooks send: the signature (RFC 4231's HMAC-SHA256 vector), a body any JSON reader takes
/// whatever the stream's name or a camera's error says, the environment a command gets; and the
/// link counters kept over a stream's life.
@Suite(.ownThreads, .tags(.fast)) struct HookEventTests {
    @Test func theSignatureIsHMACSHA256OfTheBody() {
        // RFC 4231, test case 2.
        #expect(WebhookSender.signature(body: Array("what do ya want for nothing?".utf8), secret: "Jefe")
                == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aBodyIsJSONWhateverThePeerSaid() throws {
        let hostile = "cam\"\\\n\u{0}\u{1F}\u{2028}</script>é"
        let e = StreamEvent(stream: hostile, kind: .reconnecting, at: Date(timeIntervalSince1970: 1_764_000_000.25), attempt: 3,
                            detail: "401 \"Unauthorized\"\r\n", details: ["peer": "10.0.0.1:5000", "x\"y": "\u{7F}"])
        let body = e.hookBody(id: "b-1")
        let o = try JSONDecoder().decode(WebhookBody.self, from: Data(body))
        #expect(o.stream == hostile)
        #expect(o.event == .reconnecting && o.id == "b-1")
        #expect(o.time == "2025-11-24T16:00:00.250Z")
        #expect(o.details == ["attempt": "3", "reason": "401 \"Unauthorized\"\r\n", "peer": "10.0.0.1:5000", "x\"y": "\u{7F}"])
        // The body is the type's: any encoder's form of the same value reads back the same.
        #expect(try JSONDecoder().decode(WebhookBody.self, from: JSONEncoder().encode(o)) == o && o == WebhookBody(e, id: "b-1"))
        // One line: nothing in it ends a line for a line-oriented reader.
        #expect(!body.contains(0x0A) && !body.contains(0x0D))
    }

    @Test func aCommandGetsTheEventInItsEnvironment() {
        let e = StreamEvent(stream: "cam", kind: .segmentComplete, details: ["file": "/r/cam-1.mp4", "sha256": "ab", "odd-key.x": "v\u{0}w"])
        let env = e.hookEnvironment(id: "7")
        #expect(env["LIVERELAY_EVENT"] == "segment_complete" && env["LIVERELAY_STREAM"] == "cam" && env["LIVERELAY_ID"] == "7")
        #expect(env["LIVERELAY_FILE"] == "/r/cam-1.mp4" && env["LIVERELAY_SHA256"] == "ab")
        #expect(env["LIVERELAY_ODD_KEY_X"] == "v", "a NUL cuts the value: \(env)")
    }

    @Test func linkCountersRunOverTheStreamsLife() {
        var totals = LinkTotals()
        func track(_ received: Int, _ lost: Int) -> LinkHealth {
            LinkHealth(tracks: [.init(index: 0, media: "video", packetsReceived: received, packetsLost: lost, packetsReordered: 0, jitter: 0.001)])
        }
        _ = totals.accumulate(track(100, 2))
        #expect(totals.accumulate(track(150, 3)).tracks[0].packetsReceived == 150)
        // A new session starts from zero: its counts add to the last session's.
        let after = totals.accumulate(track(10, 1))
        #expect(after.tracks[0].packetsReceived == 160 && after.tracks[0].packetsLost == 4)
    }

    @Test func theWebhookPauseDoublesUpTo30Seconds() {
        #expect((1...8).map { WebhookSender.pause(afterAttempt: $0) } == [0.5, 1, 2, 4, 8, 16, 30, 30])
        #expect(WebhookSender.pause(afterAttempt: 10_000) == 30)
    }
}
