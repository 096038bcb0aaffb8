public import Foundation
import Wire
import Synchronization

/// HLS upload ingest (phone reporter apps; `ffmpeg -f hls -method PUT`): a publisher PUTs its
/// segments and playlists one by one; the segments become the stream's media, in media-sequence
/// order, through the same `PublishPoints` as RTMP publishers.
///
/// A segment's sequence number is the last run of digits in its name (`index12.ts`, as ffmpeg
/// and most apps name them). A segment that arrives early waits for the one before it (up to
/// `holdLimit` of them, then the gap is skipped); a repeated or late one is dropped. A playlist
/// with `#EXT-X-ENDLIST`, or `idleTimeout` without uploads, ends the publish.
public final class HLSUploads: Sendable {
    public static let holdLimit = 6
    public static let idleTimeout: Double = 10

    private let points: PublishPoints
    private let sessions = Mutex<[String: Session]>([:])

    public init(points: PublishPoints) {
        self.points = points
    }

    final class Session: Sendable {
        let fd: Int32
        /// Writes block (a full pipe waits for the demuxer): one writer thread per publisher.
        let queue = DispatchQueue(label: "liverelay.hls-upload")
        let state = Mutex<(next: Int?, held: [Int: Data], lastUpload: Date, closed: Bool, initSegment: Bool)>((nil, [:], Date(), false, false))
        /// How long one segment may wait for the stream to read it. An uploader whose segments
        /// the stream cannot take (a demuxer stalled on garbage) was held here for ever: its
        /// request, its connection and the server's graceful shutdown with it.
        static let writeTimeout: Int32 = 10_000

        init(fd: Int32) {
            self.fd = fd
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }

        func write(_ data: Data) -> Bool {
            data.withUnsafeBytes { raw -> Bool in
                guard let base = raw.baseAddress else { return true }
                var off = 0
                while off < raw.count {
                    let n = Foundation.write(fd, base + off, raw.count - off)
                    if n > 0 { off += n; continue }
                    if n < 0 && errno == EINTR { continue }
                    guard n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) else { return false }
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    guard poll(&p, 1, Self.writeTimeout) == 1 else { return false }
                }
                return true
            }
        }
    }

    public enum Outcome: Equatable, Sendable {
        case accepted
        case ignored(String)
        case refused(PublishPoints.Refusal)
        case failed(String)
    }

    /// One uploaded file of `stream`. Segments are written in order before this returns (an
    /// uploader that outruns the stream is held back, not buffered without bound).
    public func upload(stream: String, file: String, body: Data) async -> Outcome {
        let lower = file.lowercased()
        if lower.hasSuffix(".m3u8") {
            if String(decoding: body, as: UTF8.self).utf8Contains("#EXT-X-ENDLIST") { end(stream) }
            return .accepted
        }
        guard lower.hasSuffix(".ts") || lower.hasSuffix(".m4s") || lower.hasSuffix(".mp4") || lower.hasSuffix(".aac") else {
            return .ignored("not a segment or playlist")
        }
        let session: Session
        switch open(stream) {
        case .success(let s): session = s
        case .failure(let r): return .refused(r)
        }
        // An init segment (fMP4) goes first, once.
        let isInit = lower.hasSuffix(".mp4") || lower.hasPrefix("init")
        let ready: [Data] = session.state.withLock { st in
            st.lastUpload = Date()
            if isInit {
                if st.initSegment { return [] }
                st.initSegment = true
                return [body]
            }
            guard let seq = Self.sequence(of: file) else { return [body] }   // no number: arrival order
            if st.next == nil { st.next = seq }
            guard seq >= st.next! else { return [] }                          // repeated or late
            st.held[seq] = body
            var out: [Data] = []
            while let d = st.held.removeValue(forKey: st.next!) { out.append(d); st.next! += 1 }
            if st.held.count > Self.holdLimit, let first = st.held.keys.min() {
                // The gap will not be filled: go on from the earliest held segment.
                st.next = first
                while let d = st.held.removeValue(forKey: st.next!) { out.append(d); st.next! += 1 }
            }
            return out
        }
        if ready.isEmpty { return .accepted }
        let ok = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            session.queue.async { c.resume(returning: ready.allSatisfy { session.write($0) }) }
        }
        if !ok { end(stream); return .failed("the stream stopped reading") }
        return .accepted
    }

    private func open(_ stream: String) -> Result<Session, PublishPoints.Refusal> {
        sessions.withLock { s -> Result<Session, PublishPoints.Refusal> in
            if let existing = s[stream] { return .success(existing) }
            switch points.begin(stream) {
            case .success(let fd):
                let session = Session(fd: fd)
                s[stream] = session
                watch(stream, session)
                return .success(session)
            case .failure(let r):
                return .failure(r)
            }
        }
    }

    /// Ends a publish that stopped uploading.
    private func watch(_ stream: String, _ session: Session) {
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [weak self] in
            guard let self else { return }
            let (idle, closed) = session.state.withLock { (Date().timeIntervalSince($0.lastUpload) > Self.idleTimeout, $0.closed) }
            if closed { return }
            if idle { self.end(stream) } else { self.watch(stream, session) }
        }
    }

    public func end(_ stream: String) {
        guard let session = sessions.withLock({ $0.removeValue(forKey: stream) }) else { return }
        session.state.withLock { $0.closed = true }
        session.queue.async {
            close(session.fd)
            self.points.end(stream)
        }
    }

    /// The last run of digits in a file name: its media sequence number.
    public static func sequence(of file: String) -> Int? {
        let base = file.split(separator: ".").dropLast().joined(separator: ".")
        var digits = ""
        for ch in base.reversed() {
            if ch.isASCII && ch.isNumber { digits.insert(ch, at: digits.startIndex) } else if !digits.isEmpty { break }
        }
        return digits.isEmpty ? nil : Int(digits.prefix(15))
    }
}
