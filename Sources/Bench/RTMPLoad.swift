import Foundation
import IngestServer
import MediaCore
import NIOCore
import NIOPosix
import Synchronization

/// The tags of an FLV file: what an RTMP publisher sends, with their timestamps (ms).
struct FLVTags {
    struct Tag {
        let type: UInt8
        let timestamp: UInt32
        let payload: [UInt8]
    }
    let tags: [Tag]
    /// From the first tag to past the last (ms): one loop of the file.
    let duration: UInt32

    init(file: String) throws {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        guard b.count > 13, b[0] == 0x46, b[1] == 0x4C, b[2] == 0x56 else { throw BenchError("\(file): not an FLV file") }
        var i = Int(b[5]) << 24 | Int(b[6]) << 16 | Int(b[7]) << 8 | Int(b[8])
        i += 4    // PreviousTagSize0
        var out: [Tag] = []
        while i + 11 <= b.count {
            let type = b[i] & 0x1F
            let size = Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
            let ts = UInt32(b[i + 7]) << 24 | UInt32(b[i + 4]) << 16 | UInt32(b[i + 5]) << 8 | UInt32(b[i + 6])
            guard i + 11 + size <= b.count else { break }
            // Media, and the metadata (onMetaData) that encoders send before it.
            if type == 8 || type == 9 || type == 18 { out.append(Tag(type: type, timestamp: ts, payload: Array(b[i + 11..<i + 11 + size]))) }
            i += 11 + size + 4
        }
        guard let first = out.first, let last = out.last else { throw BenchError("\(file): no audio or video tags") }
        tags = out
        duration = last.timestamp - first.timestamp + 33
    }
}

/// N RTMP publishers in one process, each replaying an FLV file in real time (looped), for the
/// ingest bench: what N phones or encoders would send, without N ffmpeg processes eating the
/// machine being measured. Each publisher handshakes, connects, publishes, and waits for
/// `NetStream.Publish.Start` before its first tag.
final class RTMPLoad: Sendable {
    let clip: FLVTags
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channels = Mutex<[any Channel]>([])
    let sessions = Mutex<[RTMPLoadSession]>([])

    init(clip: FLVTags) { self.clip = clip }

    /// Starts a publisher per URL (`rtmp://host:port/app/stream`); returns once all publish, or
    /// throws with how many did.
    func start(_ urls: [String], timeout: Double = 30) throws {
        for url in urls {
            guard let u = URL(string: url), let host = u.host, let port = u.port else { throw BenchError("bad URL \(url)") }
            let parts = u.path.split(separator: "/").map(String.init)
            guard parts.count == 2 else { throw BenchError("expected rtmp://host:port/app/stream, got \(url)") }
            let session = RTMPLoadSession(clip: clip, app: parts[0], stream: parts[1], tcURL: "rtmp://\(host):\(port)/\(parts[0])")
            let ch = try ClientBootstrap(group: group)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { ch in ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(session) } }
                .connect(host: host, port: port).wait()
            channels.withLock { $0.append(ch) }
            sessions.withLock { $0.append(session) }
        }
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            let s = sessions.withLock { $0 }
            if let bad = s.first(where: { $0.refused.load(ordering: .relaxed) }) { throw BenchError("a publisher was refused: \(bad.stream)") }
            if s.allSatisfy({ $0.publishing.load(ordering: .relaxed) }) { return }
            usleep(50_000)
        }
        let n = sessions.withLock { $0.filter { $0.publishing.load(ordering: .relaxed) }.count }
        throw BenchError("\(n) of \(urls.count) publishers on air after \(Int(timeout)) s")
    }

    /// Tags sent so far by every publisher.
    var tagsSent: Int { sessions.withLock { $0.reduce(0) { $0 + $1.sent.load(ordering: .relaxed) } } }

    func stop() {
        for ch in channels.withLock({ $0 }) { try? ch.close().wait() }
        try? group.syncShutdownGracefully()
    }
}

/// One publisher on its event loop.
final class RTMPLoadSession: ChannelInboundHandler, @unchecked Sendable {
    // Safety: the mutable state is touched only on the channel's event loop; the counters are atomics.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let clip: FLVTags
    let app: String, stream: String, tcURL: String
    let publishing = Atomic<Bool>(false)
    let refused = Atomic<Bool>(false)
    let sent = Atomic<Int>(0)
    /// When the first tags (the sequence header and the first keyframe) went out, monotonic ns.
    let firstSentNanos = Atomic<UInt64>(0)
    private var received: [UInt8] = []
    private var handshaken = false
    private var next = 0
    private var loop: UInt32 = 0
    private var began: NIODeadline?
    private var timer: RepeatedTask?
    static let chunkSize = 4096

    init(clip: FLVTags, app: String, stream: String, tcURL: String) {
        self.clip = clip
        self.app = app
        self.stream = stream
        self.tcURL = tcURL
    }

    func channelActive(context: ChannelHandlerContext) {
        // C0 + C1: version 3, time, zero, 1528 bytes of anything.
        var c = [UInt8](repeating: 0, count: 1537)
        c[0] = 3
        for i in 9..<1537 { c[i] = UInt8(truncatingIfNeeded: i &* 31) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: c)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard let bytes = buffer.readBytes(length: buffer.readableBytes) else { return }
        if publishing.load(ordering: .relaxed) { return }    // acknowledgements and the like
        received += bytes
        if !handshaken {
            guard received.count >= 1 + 1536 * 2 else { return }
            handshaken = true
            let s1 = Array(received[1..<1537])
            received.removeFirst(1 + 1536 * 2)
            var out = s1    // C2 echoes S1
            out += RTMPChunkWriter.chunks(csid: 2, typeID: 1, streamID: 0, payload: RTMPChunkWriter.u32(UInt32(Self.chunkSize)), chunkSize: 128)
            out += command(csid: 3, streamID: 0, [.string("connect"), .number(1), .object([("app", .string(app)), ("type", .string("nonprivate")),
                                                                                          ("flashVer", .string("FMLE/3.0")), ("tcUrl", .string(tcURL))])])
            out += command(csid: 3, streamID: 0, [.string("createStream"), .number(2), .null])
            out += command(csid: 5, streamID: 1, [.string("publish"), .number(3), .null, .string(stream), .string("live")])
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: out)), promise: nil)
        }
        // The server's answers are read only for the publish status (a load generator, not a client).
        let text = String(decoding: received, as: UTF8.self)
        if text.contains("NetStream.Publish.Start") {
            publishing.store(true, ordering: .relaxed)
            received = []
            began = .now()
            let ctx = context
            timer = context.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(10)) { [self] _ in pump(ctx) }
        } else if text.contains("BadName") || text.contains("Rejected") || text.contains("Failed") {
            refused.store(true, ordering: .relaxed)
            context.close(promise: nil)
        }
    }

    private func command(csid: UInt8, streamID: UInt32, _ values: [AMF0]) -> [UInt8] {
        RTMPChunkWriter.chunks(csid: csid, typeID: 20, streamID: streamID, payload: AMF0.encode(values), chunkSize: Self.chunkSize)
    }

    /// Sends every tag that is due (real time, the file looped).
    private func pump(_ context: ChannelHandlerContext) {
        guard let began else { return }
        let elapsed = UInt32((NIODeadline.now() - began).nanoseconds / 1_000_000)
        let base = clip.tags[0].timestamp
        var out: [UInt8] = []
        var n = 0
        while true {
            let tag = clip.tags[next]
            let due = loop &* clip.duration &+ (tag.timestamp - base)
            guard due <= elapsed else { break }
            if tag.type != 18 || loop == 0 {
                out += RTMPChunkWriter.chunks(csid: tag.type == 9 ? 6 : tag.type == 8 ? 4 : 5, typeID: tag.type, streamID: 1, timestamp: due, payload: tag.payload, chunkSize: Self.chunkSize)
                n += 1
            }
            next += 1
            if next == clip.tags.count { next = 0; loop += 1 }
        }
        guard n > 0 else { return }
        let first = sent.add(n, ordering: .relaxed).oldValue == 0
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: out)), promise: nil)
        if first { firstSentNanos.store(MonotonicClock.nanoseconds(), ordering: .relaxed) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        publishing.store(false, ordering: .relaxed)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
