import Foundation
public import Logging
import MediaCore
import Synchronization

/// A failed upload: one line, with the HTTP status when there was one; credentials removed.
public struct HTTPUploadError: Error, Sendable, CustomStringConvertible {
    public let url: String
    public let status: Int?
    public let detail: String
    public var description: String { "\(url): \(detail)" }
}

/// Pushes a stream's HLS to an HTTP origin as CDNs ingest it: PUT for every file in the order
/// made, DELETE for what leaves the window, retried with backoff, on a thread of its own so a
/// slow origin never slows the segmenter. When it falls far behind, parts (useless once late)
/// are dropped first; segments and the playlist are kept.
///
/// Safety: `@unchecked` only for `retries`, touched by the delivery thread alone; all other
/// state is behind Mutex/Atomic. Requests go through `BoundedHTTP` (bounded time and body).
public final class HLSPusher: @unchecked Sendable {
    public let base: String
    private let logger: Logger
    /// What is still to send, bounded in count and bytes, and the thread that sends it.
    private let delivery = HLSDelivery(name: "hls-push", maxItems: 200, maxBytes: 64 << 20)
    private let counters = Mutex<HLSPushCounters>(HLSPushCounters())
    private let retries = Retries()

    /// Safety: touched only on the delivery thread.
    final class Retries: @unchecked Sendable {
        var backoff = 0.25
        var attempts = 0
    }

    public init(base: String, logger: Logger) {
        self.base = base.hasSuffix("/") ? base : base + "/"
        self.logger = logger
    }

    public var stats: HLSPushCounters {
        var c = counters.withLock { $0 }
        c.queued = delivery.queue.count
        c.queuedBytes = delivery.queue.bytes
        return c
    }

    public func handle(_ output: HLSOutput) {
        let dropped = delivery.handle(output)
        if dropped > 0 { counters.withLock { $0.dropped += dropped } }
    }

    public func start() {
        delivery.start(idle: { [self] in self.counters.withLock { if $0.state == .sending { $0.state = .idle } } },
                       deliver: { [self] in self.send($0) })
    }

    /// Sends what is queued (for up to `timeout` seconds), then stops.
    public func stop(timeout: Double = 5) async {
        await delivery.stop(timeout: timeout)
    }

    /// Items queued and not yet sent.
    public var queued: Int { delivery.queue.count }

    /// One file to the origin, on the delivery thread.
    private func send(_ output: HLSOutput) -> HLSDelivery.Outcome {
        let result: Result<Void, HTTPUploadError>
        switch output {
        case .file(let name, let data): result = send("PUT", base + name, data: data, contentType: Self.contentType(name))
        case .playlist(let text): result = send("PUT", base + "index.m3u8", data: Array(text.utf8), contentType: "application/vnd.apple.mpegurl")
        case .removed(let name): result = send("DELETE", base + name, data: [], contentType: nil)
        }
        retries.attempts += 1
        switch result {
        case .success:
            counters.withLock { $0.sent += 1; $0.state = .sending }
            retries.backoff = 0.25
            retries.attempts = 0
            return .done
        case .failure(let error):
            counters.withLock { $0.failures += 1; $0.lastError = error.description }
            if case .removed = output, error.status == 404 {
                retries.attempts = 0
                return .done // already gone
            }
            // The origin says no (401, 403, 413…): asking again will not change its mind.
            // The file is given up after a second refusal instead of holding up the rest.
            if let status = error.status, (400..<500).contains(status), status != 408, status != 429, retries.attempts >= 2 {
                counters.withLock { $0.rejected += 1; $0.state = .refused }
                logger.warning("hls push refused; file given up", metadata: ["error": "\(error)"])
                retries.attempts = 0
                return .giveUp
            }
            counters.withLock { $0.state = .retrying }
            logger.warning("hls push failed; retrying", metadata: ["error": "\(error)", "retry_s": "\(retries.backoff)"])
            let wait = retries.backoff
            retries.backoff = min(retries.backoff * 2, 5)
            return .retry(after: wait)
        }
    }

    private func send(_ method: String, _ url: String, data: [UInt8], contentType: String?) -> Result<Void, HTTPUploadError> {
        let safe = Redactor.redact(url)
        // Answers are bounded: 10 s for the exchange, 64 KiB of body kept (an origin's answer to
        // a PUT is a status, not content).
        let headers = contentType.map { [("Content-Type", $0)] } ?? []
        switch BoundedHTTP.sendWaiting(method: method, url: url, headers: headers, body: method == "PUT" ? data : nil,
                                       timeout: 10, maxBody: 64 << 10) {
        case .failure(let f):
            return .failure(HTTPUploadError(url: safe, status: nil, detail: Redactor.scrub(f.description)))
        case .success(let answer) where !(200..<300).contains(answer.status):
            return .failure(HTTPUploadError(url: safe, status: answer.status, detail: "HTTP \(answer.status)"))
        case .success:
            return .success(())
        }
    }

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".ts") { return "video/mp2t" }
        if name.hasSuffix(".mp4") { return "video/mp4" }
        return "video/iso.segment"
    }
}

public struct HLSPushCounters: Sendable, Codable {
    public enum State: String, Sendable, Codable {
        case idle, sending
        /// The origin is away or failing (5xx, no answer): the file at the head is retried.
        case retrying
        /// The origin refused files (4xx): they were given up; see `lastError`.
        case refused
    }
    public var state = State.idle
    public var sent = 0
    public var failures = 0
    /// Files dropped unsent because the queue was too far behind (parts first).
    public var dropped = 0
    /// Files the origin refused twice (4xx), given up.
    public var rejected = 0
    public var queued = 0
    public var queuedBytes = 0
    public var lastError: String?
}
