import Foundation
import MediaCore
import Relay
import Synchronization

/// Watches an HLS media playlist from outside, the way a client would, and measures when each
/// new segment is listed: the capture time of the segment's last picture (read from its stamp)
/// to the moment the segment's URI first appears in the playlist. The same measure for every
/// server (LiveRelay over HTTP, ffmpeg's and nginx-rtmp's playlists on disk), with no client
/// play-out phase in it: a player's latency adds where in the segment cycle it happened to load.
final class SegmentWatcher: Sendable {
    struct Listed { let uri: String; let file: URL; let listedMs: Int64 }

    let name: String
    private let playlist: String
    private let pollMicros: UInt32
    private let store: URL
    private let listed = Mutex<[Listed]>([])
    private let recording = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)
    private let failures = Mutex<[String]>([])
    private let finished = DispatchSemaphore(value: 0)

    /// `playlist`: an http(s) URL or a file path. Segments are copied into `store` as they appear
    /// (servers delete old ones), and read after the run.
    init(name: String, playlist: String, store: URL, pollMilliseconds: Double = 5) throws {
        self.name = name
        self.playlist = playlist
        self.store = store
        self.pollMicros = UInt32(pollMilliseconds * 1000)
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let t = Thread { [self] in
            watch()
            finished.signal()
        }
        t.name = "watch-\(name)"
        t.start()
    }

    func startRecording() { recording.store(true, ordering: .relaxed) }
    func stopRecording() { recording.store(false, ordering: .relaxed) }

    func stop() {
        if running.exchange(false, ordering: .relaxed) { finished.wait() }
    }

    var segments: [Listed] { listed.withLock { $0 } }
    var problems: [String] { failures.withLock { $0 } }

    private var isHTTP: Bool { playlist.hasPrefix("http://") || playlist.hasPrefix("https://") }

    private func load(_ location: String) -> Data? {
        if isHTTP {
            // Bounded: a server that stops answering costs the watch two seconds, not a minute.
            // (AsyncHTTPClient, as every request LiveRelay makes: no FoundationNetworking, whose
            // static link would need libcurl.)
            guard case .success(let a) = BoundedHTTP.sendWaiting(method: "GET", url: location, headers: [("Cache-Control", "no-cache")],
                                                                 timeout: 2, maxBody: 8 << 20), a.status == 200 else { return nil }
            return Data(a.body)
        }
        return FileManager.default.contents(atPath: location)
    }

    private func resolve(_ uri: String) -> String {
        if uri.contains("://") || uri.hasPrefix("/") { return uri }
        if let slash = playlist.lastIndex(of: "/") { return String(playlist[...slash]) + uri }
        return uri
    }

    /// Segment URIs of a media playlist, complete lines only (a playlist read mid-write ends
    /// with a partial line).
    static func segmentURIs(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if !text.hasSuffix("\n") { lines.removeLast() }
        return lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    private func watch() {
        var seen: Set<String>?
        // A segment appeared between the previous look and this one: each look is dated at the
        // middle of its request (an HTTP round trip is not free; a file read nearly is), and the
        // listing at the middle of the two looks, whatever the transport.
        var previousLook: Double?
        while running.load(ordering: .relaxed) {
            defer { usleep(pollMicros) }
            let asked = MonotonicClock.wallMilliseconds()
            guard let data = load(playlist) else { previousLook = nil; continue }
            let answered = MonotonicClock.wallMilliseconds()
            let look = Double(asked + answered) / 2
            defer { previousLook = look }
            let uris = Self.segmentURIs(String(decoding: data, as: UTF8.self))
            let now = Int64(((previousLook ?? look) + look) / 2)
            guard var known = seen else {
                seen = Set(uris) // whatever was listed before the watch began is not measured
                continue
            }
            for uri in uris where !known.contains(uri) {
                known.insert(uri)
                guard recording.load(ordering: .relaxed) else { continue }
                let file = store.appendingPathComponent("\(listed.withLock { $0.count }).seg")
                if let bytes = load(resolve(uri)), (try? bytes.write(to: file)) != nil {
                    listed.withLock { $0.append(Listed(uri: uri, file: file, listedMs: now)) }
                } else {
                    failures.withLock { $0.append("\(uri): could not be fetched") }
                }
            }
            seen = known
        }
    }
}
