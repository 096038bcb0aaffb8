import Testing
import TestSupport
import Demux

/// The reconnect schedule on its own: sessions made up with times, no source, no waiting.
@Suite(.ownThreads, .tags(.fast)) struct ReconnectScheduleTests {
    static let second: UInt64 = 1_000_000_000

    static func at(_ seconds: Double) -> UInt64 { 1_000 * second + UInt64(seconds * 1e9) }

    /// A session whose media flowed from `from` to `to` (seconds), then ended as `ending` says.
    static func served(_ from: Double, _ to: Double, ending: ReconnectSchedule.Session.Ending = .endOfStream) -> ReconnectSchedule.Session {
        ReconnectSchedule.Session(media: at(from)...at(to), ending: ending)
    }

    /// A read that timed out (the source fell silent).
    static let silent = ReconnectSchedule.Session.Ending.failure(notServingYet: true)
    /// PLAY answered, then the end of the stream, with no media.
    static let answeredButNothing = ReconnectSchedule.Session(media: nil, ending: .endOfStream)
    /// A refusal that is not booting (credentials).
    static let refused = ReconnectSchedule.Session(media: nil, ending: .failure(notServingYet: false))

    /// Issue 40: the demo's field unit, live for 20 s between 3 s dropouts (its read timeout).
    /// Each dropout starts at the first delay; with the count reset only after 60 s live, it
    /// waited 8.6 s by its fifth dropout.
    @Test func aSourceLiveMostOfTheTimeStartsEveryDropoutAtTheFirstDelay() {
        var s = ReconnectSchedule(backoff: Backoff(), quickRetries: false, now: Self.at(0))
        var start = 0.5 // the first open
        var delays: [Double] = []
        for _ in 0..<10 {
            let last = start + 20
            let r = s.retry(after: Self.served(start, last, ending: Self.silent), at: Self.at(last + 3), unit: 0.999)
            #expect(r.attempt == 1)
            delays.append(r.delay)
            start = last + 3 + r.delay + 0.5 // the wait, then the open (an exec source starting)
        }
        #expect(delays.allSatisfy { $0 <= 0.6 }, "\(delays)")

        // What it did before: the count grew with each dropout.
        var old = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, stableRatio: .infinity), quickRetries: false, now: Self.at(0))
        start = 0.5
        var attempts: [Int] = []
        for _ in 0..<5 {
            let last = start + 20
            let r = old.retry(after: Self.served(start, last, ending: Self.silent), at: Self.at(last + 3), unit: 0.5)
            attempts.append(r.attempt)
            start = last + 3 + r.delay + 0.5
        }
        #expect(attempts == [1, 2, 3, 4, 5])
    }

    /// A source that drops soon after each return (live 1.5 s, then silent for its 3 s read
    /// timeout) is failing: it keeps backing off.
    @Test func aSourceThatDropsSoonAfterEachReturnKeepsBackingOff() {
        var s = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: false, now: Self.at(0))
        var start = 0.5
        var delays: [Double] = []
        for _ in 0..<6 {
            let r = s.retry(after: Self.served(start, start + 1.5, ending: Self.silent), at: Self.at(start + 4.5), unit: 0.5)
            delays.append(r.delay)
            start += 4.5 + r.delay + 0.3
        }
        #expect(delays == [0.5, 1, 2, 4, 8, 10])
    }

    /// A spell live for `stableAfter` resets the count whatever the outage before it.
    @Test func aLongLiveSpellResetsTheCountAfterAnyOutage() {
        let b = Backoff(initial: 0.5, cap: 10, jitter: 0)
        var s = ReconnectSchedule(backoff: b, quickRetries: false, now: Self.at(0))
        for k in 0..<100 { _ = s.retry(after: Self.refused, at: Self.at(Double(k) * 10), unit: 0.5) }
        #expect(s.attempt == 100)
        // Back after 1,000 s away: 59 s live is not enough (3 × 1,000 s and 60 s are both more) ...
        var short = s
        #expect(short.retry(after: Self.served(1_000, 1_059), at: Self.at(1_060), unit: 0.5).attempt == 101)
        // ... 60 s is.
        #expect(s.retry(after: Self.served(1_000, 1_060), at: Self.at(1_061), unit: 0.5) == .init(attempt: 1, delay: 0.5, quick: false))
        #expect(b.resets(afterLive: 6, outage: 2))
        #expect(!b.resets(afterLive: 5.9, outage: 2))
        #expect(!b.resets(afterLive: 0, outage: 0))
    }

    /// Issue 40: a camera whose port and DESCRIBE answer before its media flows answers PLAY
    /// and ends the stream at once: like a DESCRIBE refused while booting, that is retried every
    /// 0.2 s for 30 s after the camera last served or did not answer, then at the backoff.
    @Test func aStreamThatEndsBeforeItsMediaIsRetriedQuicklyWhileTheCameraBoots() {
        var s = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: true, now: Self.at(0))
        // Live for a minute, then the camera goes (its port closes) for 12 s.
        _ = s.retry(after: Self.served(0.5, 60), at: Self.at(60), unit: 0.5)
        s.sourceDidNotAnswer(at: Self.at(72))
        // Its port is back; PLAY is answered and the stream ends, for a second.
        var t = 72.0
        while t < 73 {
            let r = s.retry(after: Self.answeredButNothing, at: Self.at(t), unit: 0.5)
            #expect(r.quick && r.delay == ReconnectSchedule.quickRetry, "\(r)")
            t += r.delay + 0.05
        }
        // A server that answers PLAY and never serves is back at the backoff 30 s after the
        // camera last did not answer: sessions that delivered nothing do not keep it quick.
        let late = s.retry(after: Self.answeredButNothing, at: Self.at(102.5), unit: 0.5)
        #expect(!late.quick && late.delay == 10)
        // A session that served keeps the quick retry open again for 30 s.
        _ = s.retry(after: Self.served(103, 105), at: Self.at(105), unit: 0.5)
        #expect(s.retry(after: Self.answeredButNothing, at: Self.at(120), unit: 0.5).quick)
    }

    /// Issue 40, with LiveRelay's own client: the camera (or a relay) sends one picture after
    /// PLAY and ends the stream. A stream that ends within `servedAfter` of its first packet did
    /// not serve: it is retried quickly, and neither resets the count nor keeps the boot window
    /// open (a server that sends a picture and hangs up, for ever, is not asked 5 times a second
    /// for ever).
    @Test func aPictureAndTheEndIsNotServing() {
        var s = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: true, now: Self.at(0))
        var t = 0.1
        var attempts: [Int] = []
        while t < 29 {
            let r = s.retry(after: Self.served(t, t + 0.1), at: Self.at(t + 0.15), unit: 0.5)
            #expect(r.quick, "\(r) at \(t) s")
            attempts.append(r.attempt)
            t += 0.15 + r.delay + 0.05
        }
        #expect(attempts == Array(1...attempts.count))
        #expect(!s.retry(after: Self.served(31, 31.1), at: Self.at(31.15), unit: 0.5).quick)
    }

    /// A camera that drops the connection after PLAY, or after one picture, instead of ending
    /// the stream cleanly is retried quickly too; a connection that served and then failed is not.
    @Test func aConnectionDroppedBeforeItServedIsRetriedQuickly() {
        var s = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: true, now: Self.at(0))
        let dropped = ReconnectSchedule.Session(media: Self.at(1)...Self.at(1.1), ending: .failure(notServingYet: false))
        #expect(s.retry(after: dropped, at: Self.at(1.2), unit: 0.5).quick)
        let droppedAtPlay = ReconnectSchedule.Session(media: nil, ending: .failure(notServingYet: false), opened: true)
        #expect(s.retry(after: droppedAtPlay, at: Self.at(1.5), unit: 0.5).quick)
        let servedThenFailed = ReconnectSchedule.Session(media: Self.at(2)...Self.at(5), ending: .failure(notServingYet: false))
        #expect(!s.retry(after: servedThenFailed, at: Self.at(5.1), unit: 0.5).quick)
    }

    /// No port to knock on (an exec source, UDP, SRT), or a failure that is not booting (a
    /// stream that ended after it served, credentials refused): the backoff, never the quick retry.
    @Test func theQuickRetryNeedsAPortAndASourceThatDidNotServeYet() {
        var noPort = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: false, now: Self.at(0))
        #expect(noPort.retry(after: Self.answeredButNothing, at: Self.at(1), unit: 0.5) == .init(attempt: 1, delay: 0.5, quick: false))
        var s = ReconnectSchedule(backoff: Backoff(initial: 0.5, cap: 10, jitter: 0), quickRetries: true, now: Self.at(0))
        #expect(!s.retry(after: Self.refused, at: Self.at(1), unit: 0.5).quick)
        #expect(!s.retry(after: Self.served(2, 4), at: Self.at(4), unit: 0.5).quick)
    }
}
