import Testing
import Foundation
import MediaCore
import Demux
import TestSupport

/// The one-port RTMP ingest's reader: FLV tags pushed in memory become the same packets that
/// FFmpeg's FLV demuxer makes of the same file.
@Suite(.ownThreads, .serialized) struct FLVFeedSourceTests {
    init() { FFmpegLog.silence() }

    /// An FLV file made by the ffmpeg CLI (arguments after the inputs).
    func flv(_ args: [String]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString).flv")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-t", "3"] + args + [url.path]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        return url
    }

    /// The tags of an FLV file: (type, timestamp, payload).
    func tags(_ url: URL) throws -> [(UInt8, UInt32, [UInt8])] {
        let b = [UInt8](try Data(contentsOf: url))
        var i = 13, out: [(UInt8, UInt32, [UInt8])] = []
        while i + 11 <= b.count {
            let n = Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
            let ts = UInt32(b[i + 4]) << 16 | UInt32(b[i + 5]) << 8 | UInt32(b[i + 6]) | UInt32(b[i + 7]) << 24
            guard i + 11 + n <= b.count else { break }
            out.append((b[i], ts, Array(b[(i + 11)..<(i + 11 + n)])))
            i += 11 + n + 4
        }
        return out
    }

    func options() -> SourceOptions {
        var o = SourceOptions()
        o.openTimeout = 5
        o.readTimeout = 2
        return o
    }

    struct Seen: Equatable, CustomStringConvertible {
        let stream: Int, pts: Int64?, dts: Int64?, duration: Int64, key: Bool, data: [UInt8]
        var description: String { "#\(stream) pts \(pts.map(String.init) ?? "-") dts \(dts.map(String.init) ?? "-") dur \(duration) key \(key) \(data.count) B" }
    }

    /// Every packet, read one by one, or (`pushed`) handed on by the thread that pushes the
    /// tags, as a supervisor takes them; with how many were handed on by another thread than
    /// the reader's.
    func read(_ source: any PacketSource, pushed: Bool = false) throws -> [Seen] {
        try readCounting(source, pushed: pushed).packets
    }

    func readCounting(_ source: any PacketSource, pushed: Bool) throws -> (packets: [Seen], fromPusher: Int) {
        func seen(_ p: Packet) -> Seen { Seen(stream: p.streamIndex, pts: p.pts, dts: p.dts, duration: p.duration, key: p.isKeyframe, data: p.data) }
        if pushed, let pushing = source as? any PushingPacketSource {
            let out = Locked<(packets: [Seen], fromPusher: Int)>(([], 0))
            let reader = pthread_self()
            try pushing.deliverAll { p in
                let other = pthread_equal(pthread_self(), reader) == 0
                out.withLock { $0.packets.append(seen(p)); if other { $0.fromPusher += 1 } }
            }
            return out.withLock { $0 }
        }
        var out: [Seen] = []
        while let p = try source.readPacket() { out.append(seen(p)) }
        return (out, 0)
    }

    /// Pushes a file's tags from another thread, at once (or `paced`, 2 ms apart, so that most
    /// come after the reader is set up), then says the publisher left.
    func publish(_ tags: [(UInt8, UInt32, [UInt8])], to feed: FLVFeed, finish: Bool = true, paced: Bool = false) {
        Thread.detachNewThread {
            for t in tags {
                _ = feed.push(type: t.0, timestamp: t.1, payload: t.2)
                if paced { usleep(2000) }
            }
            if finish { feed.finish() }
        }
    }

    @Test(arguments: [(["-c:v", "libx264", "-g", "30", "-bf", "2", "-c:a", "aac"], false),   // B-frames, audio
                      (["-c:v", "libx264", "-g", "30", "-bf", "2", "-c:a", "aac"], true),    // the same, pushed
                      (["-c:v", "libx264", "-g", "15", "-bf", "0", "-an"], true)])           // video alone
    func h264AndAACBecomeTheDemuxersPacketsWithoutIt(args: [String], pushed: Bool) throws {
        let file = try flv(args)
        defer { try? FileManager.default.removeItem(at: file) }
        let expected = try read(IngestSession(url: file.path, options: options()))
        let feed = FLVFeed()
        feed.start(headerFlags: args.contains("-an") ? 1 : 5, announced: true)
        publish(try tags(file), to: feed, paced: pushed)
        let source = try FLVFeedSource(feed: feed, url: "publish://cam", options: options(), interruptHandle: InterruptHandle())
        #expect(source.isDirect)
        #expect(source.streams.map(\.codecName).sorted() == (args.contains("-an") ? ["h264"] : ["aac", "h264"]))
        #expect(source.streams.first { $0.mediaType == .video }?.width == 320)
        let (got, fromPusher) = try readCounting(source, pushed: pushed)
        // Pushed: packets are made and handed on by the publisher's thread as its tags come.
        if pushed { #expect(fromPusher > got.count / 2, "\(fromPusher) of \(got.count) handed on by the pushing thread") }
        #expect(got.count == expected.count)
        #expect(expected.count >= (args.contains("-an") ? 90 : 200))
        // Durations of the first packets depend on how long the probe looked (FFmpeg fills
        // them in once a decoder told it the frame size); the rest are the tags' own.
        for (i, (g, e)) in zip(got, expected).enumerated() where g != e && (i >= 30 || g != Seen(stream: e.stream, pts: e.pts, dts: e.dts, duration: g.duration, key: e.key, data: e.data)) {
            Issue.record("packet \(i) differs: got \(g), FFmpeg's demuxer \(e)")
            break
        }
    }

    @Test func otherCodecsStayOnTheDemuxerFedFromMemory() throws {
        let file = try flv(["-c:v", "flv1", "-c:a", "libmp3lame"])
        defer { try? FileManager.default.removeItem(at: file) }
        let expected = try read(IngestSession(url: file.path, options: options()))
        let feed = FLVFeed()
        publish(try tags(file), to: feed)
        let source = try FLVFeedSource(feed: feed, url: "publish://cam", options: options(), interruptHandle: InterruptHandle())
        #expect(!source.isDirect)
        let got = try read(source)
        #expect(got.count == expected.count && expected.count > 150, "\(got.count) packets, FFmpeg's demuxer \(expected.count)")
        #expect(got.map(\.data) == expected.map(\.data))
    }

    @Test(arguments: [false, true])
    func aSilentPublisherTimesOutAndAStopIsPrompt(pushed: Bool) throws {
        let file = try flv(["-c:v", "libx264", "-an"])
        defer { try? FileManager.default.removeItem(at: file) }
        let all = try tags(file)
        // Connected, sends a second of media, then nothing.
        let feed = FLVFeed()
        publish(Array(all.prefix(40)), to: feed, finish: false)
        var o = options()
        o.readTimeout = 1
        let source = try FLVFeedSource(feed: feed, url: "publish://cam", options: o, interruptHandle: InterruptHandle())
        let start = Date()
        let error = #expect(throws: IngestError.self) { _ = try read(source, pushed: pushed) }
        #expect(error?.kind == .timedOut, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(start) < 3)
        // The reader gone, the publisher's next push is refused: it is dropped.
        _ = consume source
        #expect(!feed.push(type: 9, timestamp: 5000, payload: [0x27, 1, 0, 0, 0, 1]))

        let stopped = FLVFeed()
        publish(Array(all.prefix(40)), to: stopped, finish: false)
        let handle = InterruptHandle()
        let second = try FLVFeedSource(feed: stopped, url: "publish://cam", options: options(), interruptHandle: handle)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { handle.interrupt() }
        let t = Date()
        let e2 = #expect(throws: IngestError.self) { _ = try read(second, pushed: pushed) }
        #expect(e2?.kind == .stopped)
        #expect(Date().timeIntervalSince(t) < 1)
    }

    /// A lock around a value, for packets handed on from another thread.
    final class Locked<T>: @unchecked Sendable {
        private var value: T
        private let lock = NSLock()
        init(_ v: T) { value = v }
        func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
    }

    @Test func garbageTagsNeitherCrashNorStopTheStream() throws {
        let file = try flv(["-c:v", "libx264", "-g", "30", "-c:a", "aac"])
        defer { try? FileManager.default.removeItem(at: file) }
        let all = try tags(file)
        let feed = FLVFeed()
        Thread.detachNewThread {
            for (i, t) in all.enumerated() {
                _ = feed.push(type: t.0, timestamp: t.1, payload: t.2)
                if i > 150 && i % 7 == 0 {
                    // Short, empty, unknown and mislabelled tags between the real ones.
                    for junk: (UInt8, [UInt8]) in [(9, []), (9, [0x17]), (9, [0x17, 1, 0xFF]), (8, [0xAF]), (8, []), (9, [0x12, 1, 0, 0, 0, 9]),
                                                   (8, [0x2F, 1, 1, 2]), (18, [0x02, 0xFF]), (77, [1, 2, 3])] {
                        _ = feed.push(type: junk.0, timestamp: t.1, payload: junk.1)
                    }
                }
            }
            feed.finish()
        }
        let source = try FLVFeedSource(feed: feed, url: "publish://cam", options: options(), interruptHandle: InterruptHandle())
        #expect(source.isDirect)
        let got = try read(source)
        let media = all.filter { ($0.0 == 9 && $0.2.count > 5 && $0.2[1] == 1) || ($0.0 == 8 && $0.2.count > 2 && $0.2[1] == 1) }
        #expect(got.count == media.count, "\(got.count) packets from \(media.count) media tags")
    }
}
