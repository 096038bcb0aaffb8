/// When a supervised source is opened again, decided from what each session came to: the
/// backoff's attempt count, when a live spell earns a fresh count, and a booting camera's quick
/// retry. Pure: every time is passed in (monotonic nanoseconds), so tests drive it without
/// waiting. `SourceSupervisor` keeps one per source, on its ingest thread.
package struct ReconnectSchedule: Sendable {
    /// What one session (an open, and the reading that followed) came to.
    package struct Session: Sendable, Hashable {
        package enum Ending: Sendable, Hashable {
            /// The stream ended: a read found its end.
            case endOfStream
            /// The open or a read failed; `notServingYet` as `IngestError.meansNotServingYet`
            /// says (refused, stalled or without media while booting, not credentials refused).
            case failure(notServingYet: Bool)
        }

        /// When its first and its last media packet came; nil when none came.
        package var media: ClosedRange<UInt64>?
        package var ending: Ending
        /// The open succeeded (DESCRIBE, SETUP and PLAY answered): what failed came after.
        package var opened: Bool

        package init(media: ClosedRange<UInt64>?, ending: Ending, opened: Bool = false) {
            self.media = media
            self.ending = ending
            self.opened = opened || media != nil
        }
    }

    /// The next open: its attempt number (from 1) and the wait before it, seconds.
    package struct Retry: Sendable, Hashable {
        package let attempt: Int
        package let delay: Double
        /// The wait is the booting camera's short one, not the backoff's.
        package let quick: Bool

        package init(attempt: Int, delay: Double, quick: Bool) {
            self.attempt = attempt
            self.delay = delay
            self.quick = quick
        }
    }

    /// How long after a source last served, or last did not answer, a source whose port
    /// answers but which does not serve yet is retried every `quickRetry` instead of after its
    /// backoff.
    package static let bootWindow: Double = 30
    package static let quickRetry: Double = 0.2
    /// Media that flowed for less than this, seconds, is not a source serving: a relay's cached
    /// picture, a booting encoder's first, then the end. A stream that ends that soon is retried
    /// like a booting camera, and does not count as live for the backoff or the boot window.
    package static let servedAfter: Double = 1

    package let backoff: Backoff
    /// Quick retries need a port to knock on (`Reachability`): it tells a camera that boots
    /// (its port answers) from one that is gone.
    package let quickRetries: Bool
    package private(set) var attempt = 0
    /// When the source last served or last did not answer: a camera booting after either is
    /// retried quickly. A session that answered but did not serve does not count, so a server
    /// that answers PLAY and never serves is back at the usual backoff after `bootWindow`, not
    /// retried quickly for ever.
    private var lastChange: UInt64
    /// When the source last served (the last packet of the last session that did; at first,
    /// when the schedule began): the outage before the next live spell is counted from it.
    private var mediaEnded: UInt64

    package init(backoff: Backoff, quickRetries: Bool, now: UInt64) {
        self.backoff = backoff
        self.quickRetries = quickRetries
        lastChange = now
        mediaEnded = now
    }

    /// The source did not answer at `now` (its port was closed: it was down, not booting).
    package mutating func sourceDidNotAnswer(at now: UInt64) {
        lastChange = now
    }

    /// The open after `session`, which ended at `now`; `unit` is the jitter's random draw in 0..<1.
    package mutating func retry(after session: Session, at now: UInt64, unit: Double) -> Retry {
        var served = false
        if let media = session.media {
            let live = Self.seconds(media.upperBound, since: media.lowerBound)
            served = live >= Self.servedAfter
            if served {
                if backoff.resets(afterLive: live, outage: Self.seconds(media.lowerBound, since: mediaEnded)) { attempt = 0 }
                mediaEnded = media.upperBound
                lastChange = now
            }
        }
        let notServingYet: Bool
        switch session.ending {
        // The end of a stream that did not serve (PLAY answered, then the end, or a picture and
        // the end: a camera booting, a relay whose own source is not back) is a booting
        // camera's failure, as a DESCRIBE refused is.
        case .endOfStream: notServingYet = !served
        // So is a connection that fails once opened, before it served (a camera that closes
        // after PLAY, or after one picture, is dropped as often as it ends cleanly).
        case .failure(let n): notServingYet = n || (session.opened && !served)
        }
        if attempt < Int.max { attempt += 1 }
        let delay = backoff.delay(attempt: attempt, unit: unit)
        if notServingYet, quickRetries, Self.seconds(now, since: lastChange) < Self.bootWindow, delay > Self.quickRetry {
            return Retry(attempt: attempt, delay: Self.quickRetry, quick: true)
        }
        return Retry(attempt: attempt, delay: delay, quick: false)
    }

    /// Seconds from `start` to `end`; 0 when `end` is not later.
    static func seconds(_ end: UInt64, since start: UInt64) -> Double {
        end > start ? Double(end - start) / 1e9 : 0
    }
}
