import Logging
import Relay
import MediaCore
import NIOCore
import Foundation

/// One RTMP connection: handshake, commands, then media written as FLV to the stream's pipe.
final class RTMPSession: ChannelInboundHandler, @unchecked Sendable {
    // Safety: used only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: RTMPIngestServer
    var reader = RTMPChunkReader()
    var tcURL = ""
    var stream: String?
    var output: FLVPipe?
    var outChunkSize = 4096

    init(server: RTMPIngestServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard let bytes = buffer.readBytes(length: buffer.readableBytes) else { return }
        do {
            let (reply, messages) = try reader.feed(bytes)
            if let reply { send(context, reply) }
            for m in messages { try handle(m, context) }
            context.flush()
        } catch {
            server.logger.info("rtmp ingest: connection closed", metadata: ["why": "\(error)", "stream": "\(stream ?? "-")"])
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            server.logger.info("rtmp ingest: closing a silent connection", metadata: ["stream": "\(stream ?? "-")"])
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func finish() {
        if let o = output { server.logger.info("rtmp ingest: publisher left", metadata: ["stream": "\(stream ?? "-")", "bytes": "\(o.written)"]) }
        output?.close()
        output = nil
        if let s = stream { server.points.end(s); stream = nil }
    }

    struct Refused: Error, CustomStringConvertible { let description: String }

    private func send(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func command(_ context: ChannelHandlerContext, streamID: UInt32 = 0, _ values: [AMF0]) {
        send(context, RTMPChunkWriter.chunks(csid: streamID == 0 ? 3 : 5, typeID: 20, streamID: streamID, payload: AMF0.encode(values), chunkSize: outChunkSize))
    }

    private func status(_ context: ChannelHandlerContext, _ level: String, _ code: String, _ description: String) {
        command(context, streamID: 1, [.string("onStatus"), .number(0), .null,
                                       .object([("level", .string(level)), ("code", .string(code)), ("description", .string(description))])])
    }

    private func handle(_ m: RTMPChunkReader.Message, _ context: ChannelHandlerContext) throws {
        switch m.typeID {
        case 8, 9:
            guard let output else { return }     // media before publish: ignored
            try output.write(tagType: m.typeID, timestamp: m.timestamp, payload: m.payload)
        case 18:
            // Metadata: "@setDataFrame", "onMetaData", {…} → an FLV script tag without the first.
            guard let output else { return }
            var payload = m.payload
            if let values = try? AMF0.decodeAll(payload), values.first?.string == "@setDataFrame" {
                payload = AMF0.encode(Array(values.dropFirst()))
            }
            try output.write(tagType: 18, timestamp: m.timestamp, payload: payload)
        case 20, 17:
            let body = m.typeID == 17 ? Array(m.payload.dropFirst()) : m.payload
            let values = (try? AMF0.decodeAll(body)) ?? []
            guard let name = values.first?.string else { return }
            let txn = values.count > 1 ? values[1] : .number(0)
            try command(name, txn: txn, args: Array(values.dropFirst(2)), context)
        default:
            break    // chunk size (read by the reader), acknowledgements, user control, window sizes
        }
    }

    private func command(_ name: String, txn: AMF0, args: [AMF0], _ context: ChannelHandlerContext) throws {
        switch name {
        case "connect":
            let object = args.first
            let app = object?["app"]?.string ?? ""
            tcURL = object?["tcUrl"]?.string ?? ""
            let appName = app.split(separator: "?").first.map(String.init) ?? ""
            guard appName.trimmingCharacters(in: CharacterSet(charactersIn: "/")) == server.settings.app else {
                server.refused("app")
                command(context, [.string("_error"), txn, .null, .object([("level", .string("error")), ("code", .string("NetConnection.Connect.Rejected")),
                                                                          ("description", .string("unknown application"))])])
                context.flush()
                throw Refused(description: "unknown application")
            }
            send(context, RTMPChunkWriter.chunks(csid: 2, typeID: 5, streamID: 0, payload: RTMPChunkWriter.u32(2_500_000), chunkSize: 128))
            send(context, RTMPChunkWriter.chunks(csid: 2, typeID: 6, streamID: 0, payload: RTMPChunkWriter.u32(2_500_000) + [2], chunkSize: 128))
            send(context, RTMPChunkWriter.chunks(csid: 2, typeID: 1, streamID: 0, payload: RTMPChunkWriter.u32(UInt32(outChunkSize)), chunkSize: 128))
            command(context, [.string("_result"), txn,
                              .object([("fmsVer", .string("FMS/3,0,1,123")), ("capabilities", .number(31))]),
                              .object([("level", .string("status")), ("code", .string("NetConnection.Connect.Success")),
                                       ("description", .string("Connection succeeded.")), ("objectEncoding", .number(0))])])
        case "releaseStream", "FCPublish", "FCUnpublish":
            command(context, [.string("_result"), txn, .null, .undefined])
        case "createStream":
            command(context, [.string("_result"), txn, .null, .number(1)])
        case "publish":
            guard stream == nil else { return }
            let raw = args.count > 1 ? (args[1].string ?? "") : ""
            let (name, query) = Self.split(raw)
            let key = query["key"] ?? Self.split(tcURL).query["key"]
            if server.engine.settings(name) == nil && server.settings.autoCreate {
                try autoCreate(name, key: key, context)
                return
            }
            guard let s = server.engine.settings(name), server.points.streams.contains(name) else {
                server.refused("unknown_stream")
                status(context, "error", "NetStream.Publish.BadName", "no such stream")
                context.flush()
                throw Refused(description: "publish to an unknown stream")
            }
            if server.mayPublish(s, key: key) {
                try begin(name, context)
                return
            }
            // A user with the publish permission instead of a key: ?user=…&pass=… (bcrypt, off
            // the event loop); media sent meanwhile is dropped, as before any publish.
            let tc = Self.split(tcURL).query
            if let check = server.authorizeUser, let user = query["user"] ?? tc["user"], let pass = query["pass"] ?? tc["pass"] {
                let client = context.remoteAddress?.ipAddress ?? "unknown"
                let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                Task {
                    let ok = await check(user, pass, name, client)
                    loop.eventLoop.execute {
                        let (session, context) = loop.value
                        do {
                            guard ok else { try session.refuseKey(name, context) }
                            try session.begin(name, context)
                        } catch {
                            context.close(promise: nil)
                        }
                        context.flush()
                    }
                }
                return
            }
            try refuseKey(name, context)
        case "deleteStream":
            finish()
        default:
            break
        }
    }

    private func refuseKey(_ name: String, _ context: ChannelHandlerContext) throws -> Never {
        server.refused("key")
        status(context, "error", "NetStream.Publish.BadName", "wrong or missing key")
        context.flush()
        throw Refused(description: "wrong or missing key for \(name)")
    }

    /// A publish to a stream that does not exist yet: made from `ingest.defaults` (the global key
    /// is the credential), then the publish goes on as for any stream.
    private func autoCreate(_ name: String, key: String?, _ context: ChannelHandlerContext) throws {
        guard RTMPIngestServer.isNewStreamName(name) else {
            server.refused("bad_name")
            status(context, "error", "NetStream.Publish.BadName", "stream names may use letters, digits, - and _ only")
            context.flush()
            throw Refused(description: "bad stream name")
        }
        if let global = server.settings.publishKey, !(key.map { RTMPIngestServer.constantTimeEqual(global, $0) } ?? false) {
            server.refused("key")
            status(context, "error", "NetStream.Publish.BadName", "wrong or missing key")
            context.flush()
            throw Refused(description: "wrong or missing key for a new stream")
        }
        let settings = server.engine.configuration.ingest.autoCreated(name)
        let engine = server.engine
        let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        Task {
            // Made once: a concurrent first publish of the same name finds it made.
            try? await engine.add(settings)
            loop.eventLoop.execute {
                let (session, context) = loop.value
                do { try session.begin(name, context) } catch { context.close(promise: nil) }
                context.flush()
            }
        }
    }

    private func begin(_ name: String, _ context: ChannelHandlerContext) throws {
            switch server.points.begin(name) {
            case .failure(.alreadyPublishing):
                server.refused("busy")
                status(context, "error", "NetStream.Publish.BadName", "stream is already publishing")
                context.flush()
                throw Refused(description: "\(name) already has a publisher")
            case .failure(let f):
                status(context, "error", "NetStream.Publish.Failed", "cannot start")
                context.flush()
                throw Refused(description: "\(name): \(f)")
            case .success(let fd):
                stream = name
                let points = server.points
                output = FLVPipe(fd: fd, loop: context.eventLoop, onFailure: { [weak self] in
                    context.close(promise: nil)
                    _ = self
                }, onHeader: { flags in points.announce(name, flvFlags: flags) })
                server.logger.info("rtmp ingest: publishing", metadata: ["stream": "\(name)"])
                status(context, "status", "NetStream.Publish.Start", "\(name) is now published")
            }
    }

    /// `name?k=v&…` → name and query (values not percent-decoded beyond `+`).
    static func split(_ s: String) -> (name: String, query: [String: String]) {
        guard let q = s.firstIndex(of: "?") else { return (s, [:]) }
        var query: [String: String] = [:]
        for pair in s[s.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            let value = kv.count > 1 ? String(kv[1]).removingPercentEncoding ?? String(kv[1]) : ""
            query[String(kv[0])] = value
        }
        return (String(s[..<q]), query)
    }
}

/// A publisher's media as FLV into the stream's pipe, written without blocking the event loop:
/// what the pipe cannot take now waits here (bounded) and is retried every few milliseconds.
final class FLVPipe: @unchecked Sendable {
    // Safety: used only on one event loop.
    let fd: Int32
    let loop: any EventLoop
    let onFailure: () -> Void
    private var pending: [UInt8] = []
    private var pendingStart = 0
    private var retry: Scheduled<Void>?
    private var closed = false
    /// More than this waiting means the stream's reader stopped: the publisher is dropped.
    static let limit = 32 << 20

    /// Told the FLV header's flags just before the header is written, when the publisher's
    /// metadata announced its streams.
    let onHeader: ((UInt8) -> Void)?

    init(fd: Int32, loop: any EventLoop, onFailure: @escaping () -> Void, onHeader: ((UInt8) -> Void)? = nil) {
        self.fd = fd
        self.loop = loop
        self.onFailure = onFailure
        self.onHeader = onHeader
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private var headerWritten = false
    private(set) var written = 0

    /// The FLV header, before the first tag: it says which of audio and video to expect (the
    /// demuxer waits for every stream the header announces). Known from the metadata, else from
    /// the first media tag.
    private func header(first tagType: UInt8, payload: [UInt8]) {
        var flags: UInt8 = tagType == 8 ? 4 : 1
        if tagType == 18, let values = try? AMF0.decodeAll(payload), let meta = values.dropFirst().first {
            flags = (meta["videocodecid"] != nil ? 1 : 0) | (meta["audiocodecid"] != nil ? 4 : 0)
            if flags == 0 { flags = 5 }
            // Only what the metadata says is an announcement: a guess from the first tag must
            // still let a second stream turn up while the reader probes.
            onHeader?(flags)
        }
        // Signature, version 1, flags, header size 9; PreviousTagSize0.
        pending = [0x46, 0x4C, 0x56, 1, flags, 0, 0, 0, 9, 0, 0, 0, 0]
        headerWritten = true
    }

    func write(tagType: UInt8, timestamp: UInt32, payload: [UInt8]) throws {
        guard !closed else { return }
        if !headerWritten { header(first: tagType, payload: payload) }
        let n = payload.count
        var tag: [UInt8] = [tagType, UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF),
                            UInt8(timestamp >> 16 & 0xFF), UInt8(timestamp >> 8 & 0xFF), UInt8(timestamp & 0xFF), UInt8(timestamp >> 24),
                            0, 0, 0]
        tag += payload
        tag += RTMPChunkWriter.u32(UInt32(11 + n))
        pending += tag
        flush()
        if pending.count - pendingStart > Self.limit { throw RTMPSession.Refused(description: "the stream's reader stopped taking media") }
    }

    private func flush() {
        while pendingStart < pending.count {
            let w = pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + pendingStart, pending.count - pendingStart) }
            if w > 0 { pendingStart += w; written += w; continue }
            if w < 0 && (errno == EAGAIN || errno == EINTR) { break }
            // The reader is gone (EPIPE): the stream reconnected or stopped.
            close()
            onFailure()
            return
        }
        if pendingStart == pending.count { pending.removeAll(keepingCapacity: true); pendingStart = 0 }
        else if pendingStart > 1 << 20 { pending.removeFirst(pendingStart); pendingStart = 0 }
        if pendingStart < pending.count && retry == nil && !closed {
            retry = loop.scheduleTask(in: .milliseconds(5)) { [weak self] in
                self?.retry = nil
                self?.flush()
            }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        retry?.cancel()
        Glibc.close(fd)
    }
}
