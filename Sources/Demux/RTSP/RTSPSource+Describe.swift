import Logging
import MediaCore
import Glibc
import Wire

/// OPTIONS and DESCRIBE, hedged: an IP camera often opens its RTSP port while it boots, before
/// its encoder serves, and then leaves requests unanswered. A connection whose request has had no
/// answer for `hedgeAfter` stays open while a new connection asks again (at most four at once:
/// the first, and the three newest); the first to answer DESCRIBE is kept. A slow camera is still heard on its first connection, and
/// a camera that comes up is heard within `hedgeAfter` of serving, whatever the open deadline.
extension RTSPSource {
    static let hedgeAfter: UInt64 = 500_000_000

    /// ONVIF's requirement for the audio backchannel, sent with DESCRIBE, SETUP and PLAY.
    static let backchannelRequire = "Require: www.onvif.org/ver20/backchannel"

    /// DESCRIBE's headers: the backchannel's requirement while it is asked for.
    var describeHeaders: [String] { ["Accept: application/sdp"] + (askBackchannel ? [Self.backchannelRequire] : []) }
    static let maxHedges = 4

    private final class Attempt {
        let link: TCPLink
        var want: Int
        var described = false
        var challenged = false
        init(link: TCPLink, want: Int) { self.link = link; self.want = want }
    }

    /// The DESCRIBE answer (any status); `link` is the connection that gave it.
    func describe(until end: UInt64) throws(WireError) -> RTSPResponse {
        var attempts: [Attempt] = []
        var nextHedge: UInt64 = 0
        var lastError: WireError = .timedOut
        while true {
            let now = MonotonicClock.nanoseconds()
            if now >= end { throw attempts.isEmpty ? lastError : .timedOut }
            if now >= nextHedge {
                nextHedge = now &+ Self.hedgeAfter
                // The first connection stays until the deadline (a slow camera answers on it);
                // the later ones rotate, so a new one asks every `hedgeAfter`.
                if attempts.count >= Self.maxHedges { attempts.remove(at: 1) }
                do throws(WireError) {
                    let l = try TCPLink(host: address.host, port: address.port, deadline: min(end, nextHedge), interrupt: interruptHandle)
                    try l.send(requestBytes("OPTIONS", url: address.withoutCredentials, headers: []), deadline: end, interrupt: interruptHandle)
                    attempts.append(Attempt(link: l, want: cseq))
                } catch {
                    switch error {
                    case .stopped: throw error
                    // The port is closed: not a camera booting. Only the first attempt says so.
                    case .unreachable where attempts.isEmpty: throw error
                    default: lastError = error
                    }
                }
            }
            var polls = attempts.map { pollfd(fd: $0.link.fd, events: Int16(POLLIN), revents: 0) }
            let wake = min(end, nextHedge)
            let ms = try pollSlice(until: max(wake, now &+ 1_000_000), interrupt: interruptHandle)
            if !polls.isEmpty { _ = poll(&polls, nfds_t(polls.count), ms) } else { usleep(UInt32(ms) * 1000) }
            var dead: [Attempt] = []
            for (i, a) in attempts.enumerated() where polls[i].revents != 0 {
                do throws(WireError) {
                    _ = try a.link.receive()
                    while let frame = try a.link.input.nextFrame() {
                        guard case .response(let r) = frame, r.header("cseq").flatMap({ PeerNumber.integer($0, in: 0...Int.max) }) == a.want else { continue }
                        if r.status == 401, !a.challenged, let user = address.user {
                            a.challenged = true
                            var credentials = RTSPClientCredentials(user: user, password: address.password ?? "")
                            if credentials.take(challenges: r.headers("www-authenticate")) {
                                auth = credentials
                                let method = a.described ? "DESCRIBE" : "OPTIONS"
                                let headers = a.described ? describeHeaders : []
                                try a.link.send(requestBytes(method, url: address.withoutCredentials, headers: headers), deadline: end, interrupt: interruptHandle)
                                a.want = cseq
                                continue
                            }
                        }
                        if !a.described {
                            if r.status == 401 { throw WireError.status(401, r.reason) }
                            if r.status == 200, let p = r.header("public"), RTSPPublicHeader.methods(p).contains { $0 == "GET_PARAMETER" } { keepaliveMethod = "GET_PARAMETER" }
                            a.described = true
                            try a.link.send(requestBytes("DESCRIBE", url: address.withoutCredentials, headers: describeHeaders), deadline: end, interrupt: interruptHandle)
                            a.want = cseq
                            continue
                        }
                        // A camera without the backchannel refuses the requirement (551 Option
                        // not supported, or another error): asked again without it.
                        if askBackchannel, r.status != 200, r.status != 401 {
                            logger.info("the camera has no ONVIF backchannel; read without", metadata: ["source": "\(redactedURL)", "status": "\(r.status)"])
                            askBackchannel = false
                            try a.link.send(requestBytes("DESCRIBE", url: address.withoutCredentials, headers: describeHeaders), deadline: end, interrupt: interruptHandle)
                            a.want = cseq
                            continue
                        }
                        link = a.link
                        return r
                    }
                    if a.link.isClosed { throw WireError.closed }
                } catch {
                    switch error {
                    case .stopped, .status(401, _): throw error
                    default:
                        lastError = error
                        dead.append(a)
                        // A connection that closed unanswered: ask again at once.
                        nextHedge = min(nextHedge, MonotonicClock.nanoseconds() &+ 100_000_000)
                    }
                }
            }
            attempts.removeAll { a in dead.contains { $0 === a } }
        }
    }
}
