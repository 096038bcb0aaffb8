import Wire
import Foundation
import Crypto
import Logging
import MediaCore
import Synchronization

/// One webhook: events wait in a bounded queue (the oldest go when it is full, counted) and are
/// delivered one at a time, in order, each retried with a growing pause until the receiver
/// answers 2xx or the attempts run out (given up, counted). A receiver that is down or slow
/// never holds up a stream, another hook or the event bus.
final class WebhookSender: Sendable {
    struct Counters: Sendable {
        var delivered = 0
        /// Attempts that failed (each is retried until the attempts run out).
        var failedAttempts = 0
        /// Events given up after every attempt failed.
        var givenUp = 0
        /// Events dropped because the queue was full.
        var dropped = 0
        var queued = 0
        var lastError: String?
    }
    private struct State {
        var pending: [(id: String, body: [UInt8])] = []
        var counters = Counters()
    }

    let name: String
    let settings: HookSettings.Webhook
    private let state = Mutex(State())
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    private let logger: Logger
    /// The pause before attempt n + 1 (n ≥ 1): 0.5 s doubled each time, at most 30 s.
    static func pause(afterAttempt n: Int) -> Double { min(30, 0.5 * pow(2, Double(min(n, 16) - 1))) }

    init(name: String, settings: HookSettings.Webhook, logger: Logger) {
        self.name = name
        self.settings = settings
        self.logger = logger
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    var counters: Counters { state.withLock { s in var c = s.counters; c.queued = s.pending.count; return c } }

    func enqueue(_ event: StreamEvent, id: String) {
        guard settings.events?.contains(event.kind) ?? true else { return }
        let body = event.hookBody(id: id)
        state.withLock { s in
            if s.pending.count >= settings.queue {
                s.pending.removeFirst()
                s.counters.dropped += 1
            }
            s.pending.append((id, body))
        }
        wake.yield()
    }

    /// Delivers until cancelled.
    func run() async {
        for await _ in wakes {
            while !Task.isCancelled, let next = state.withLock({ $0.pending.first }) {
                await deliver(id: next.id, body: next.body)
                state.withLock { s in if s.pending.first?.id == next.id { s.pending.removeFirst() } }
            }
            if Task.isCancelled { return }
        }
    }

    func stop() { wake.finish() }

    private func deliver(id: String, body: [UInt8]) async {
        var headers = [("Content-Type", "application/json"), ("User-Agent", "LiveRelay"), ("X-LiveRelay-Delivery", id)]
        if let secret = settings.secret { headers.append(("X-LiveRelay-Signature", Self.signature(body: body, secret: secret))) }
        for attempt in 1...settings.attempts {
            let result = await BoundedHTTP.send(method: "POST", url: settings.url, headers: headers, body: body,
                                                timeout: settings.timeout, maxBody: 64 * 1024)
            let problem: String
            switch result {
            case .success(let answer) where (200..<300).contains(answer.status):
                state.withLock { $0.counters.delivered += 1 }
                return
            case .success(let answer): problem = "answered \(answer.status)"
            case .failure(let f): problem = f.description
            }
            state.withLock { s in
                s.counters.failedAttempts += 1
                s.counters.lastError = problem
            }
            if attempt == settings.attempts || Task.isCancelled { break }
            try? await Task.sleep(for: .seconds(Self.pause(afterAttempt: attempt)))
        }
        state.withLock { $0.counters.givenUp += 1 }
        logger.warning("hook: a webhook event is given up", metadata: ["hook": "\(name)", "url": "\(Redactor.redact(settings.url))",
                                                                        "attempts": "\(settings.attempts)", "error": "\(counters.lastError ?? "")"])
    }

    /// `sha256=` and the hex HMAC-SHA256 of the body under the secret.
    static func signature(body: [UInt8], secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(secret.utf8)))
        return "sha256=" + Hex.encode(mac)
    }
}
