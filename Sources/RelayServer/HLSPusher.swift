import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import Logging
public import Relay
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
/// Safety: `@unchecked` only for `session` (URLSession is thread-safe but not marked Sendable
/// on Linux); all other state is behind Mutex/Atomic.
public final class HLSPusher: @unchecked Sendable {
    public let base: String
    private let logger: Logger
    private let pending = Mutex<[HLSOutput]>([])
    private let wake = NSCondition()
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let counters = Mutex<HLSPushCounters>(HLSPushCounters())

    public init(base: String, logger: Logger) {
        self.base = base.hasSuffix("/") ? base : base + "/"
        self.logger = logger
    }

    public var stats: HLSPushCounters { counters.withLock { $0 } }

    public func handle(_ output: HLSOutput) {
        pending.withLock { p in
            p.append(output)
            if p.count > 200 {
                // Far behind: late parts and superseded playlists go first.
                let before = p.count
                var sawPlaylist = false
                p = p.reversed().filter { o in
                    switch o {
                    case .playlist: defer { sawPlaylist = true }; return !sawPlaylist
                    case .file(let name, _): return !name.hasPrefix("part")
                    case .removed: return true
                    }
                }.reversed()
                let dropped = before - p.count
                counters.withLock { $0.dropped += dropped }
            }
        }
        wake.lock(); wake.signal(); wake.unlock()
    }

    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let t = Thread { [self] in self.run(); self.done.signal() }
        t.name = "hls-push"
        t.start()
    }

    /// Sends what is queued (bounded), then stops.
    public func stop(timeout: Double = 5) {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        wake.lock(); wake.signal(); wake.unlock()
        _ = done.wait(timeout: .now() + timeout)
    }

    private func run() {
        var backoff = 0.25
        var draining = false
        while true {
            let next: HLSOutput? = pending.withLock { p in p.isEmpty ? nil : p.first }
            guard let next else {
                if !running.load(ordering: .relaxed) { return }
                wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(0.5)); wake.unlock()
                continue
            }
            if !running.load(ordering: .relaxed) && !draining {
                draining = true
                DispatchQueue.global().asyncAfter(deadline: .now() + 4) { [self] in self.pending.withLock { $0.removeAll() } }
            }
            let result: Result<Void, HTTPUploadError>
            switch next {
            case .file(let name, let data): result = send("PUT", base + name, data: data, contentType: Self.contentType(name))
            case .playlist(let text): result = send("PUT", base + "index.m3u8", data: Array(text.utf8), contentType: "application/vnd.apple.mpegurl")
            case .removed(let name): result = send("DELETE", base + name, data: [], contentType: nil)
            }
            switch result {
            case .success:
                pending.withLock { p in if !p.isEmpty { p.removeFirst() } }
                counters.withLock { $0.sent += 1 }
                backoff = 0.25
            case .failure(let error):
                counters.withLock { $0.failures += 1; $0.lastError = error.description }
                if case .removed = next, error.status == 404 {
                    pending.withLock { p in if !p.isEmpty { p.removeFirst() } } // already gone
                    continue
                }
                logger.warning("hls push failed; retrying", metadata: ["error": "\(error)", "retry_s": "\(backoff)"])
                if draining && !running.load(ordering: .relaxed) && pending.withLock({ $0.isEmpty }) { return }
                wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(backoff)); wake.unlock()
                backoff = min(backoff * 2, 5)
            }
        }
    }

    private let session: URLSession = {
        let c = URLSessionConfiguration.ephemeral
        c.timeoutIntervalForRequest = 5
        c.timeoutIntervalForResource = 10
        c.httpMaximumConnectionsPerHost = 1
        return URLSession(configuration: c)
    }()

    /// One request, waited for on this thread (the pusher's own).
    private func send(_ method: String, _ url: String, data: [UInt8], contentType: String?) -> Result<Void, HTTPUploadError> {
        let safe = Redactor.redact(url)
        guard let u = URL(string: url) else { return .failure(HTTPUploadError(url: safe, status: nil, detail: "not a valid URL")) }
        var request = URLRequest(url: u)
        request.httpMethod = method
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if method == "PUT" { request.httpBody = Data(data) }
        let result = Mutex<Result<Void, HTTPUploadError>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        session.dataTask(with: request) { _, response, error in
            let r: Result<Void, HTTPUploadError>
            if let error {
                r = .failure(HTTPUploadError(url: safe, status: nil, detail: Redactor.scrub(error.localizedDescription)))
            } else if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
                r = .failure(HTTPUploadError(url: safe, status: http.statusCode, detail: "HTTP \(http.statusCode)"))
            } else {
                r = .success(())
            }
            result.withLock { $0 = r }
            finished.signal()
        }.resume()
        if finished.wait(timeout: .now() + 12) == .timedOut {
            return .failure(HTTPUploadError(url: safe, status: nil, detail: "no answer within 12 s"))
        }
        return result.withLock { $0 } ?? .failure(HTTPUploadError(url: safe, status: nil, detail: "no answer"))
    }

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".ts") { return "video/mp2t" }
        if name.hasSuffix(".mp4") { return "video/mp4" }
        return "video/iso.segment"
    }
}

public struct HLSPushCounters: Sendable, Codable {
    public var sent = 0
    public var failures = 0
    public var dropped = 0
    public var lastError: String?
}
