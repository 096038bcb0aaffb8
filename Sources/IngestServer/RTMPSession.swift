import Access
import Logging
import Wire
import Relay
import Demux
import MediaCore
import NIOCore
import Foundation

/// One RTMP connection: handshake, commands, then media pushed as FLV tags into the stream's feed.
final class RTMPSession: ChannelInboundHandler, @unchecked Sendable {
    // Safety: used only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: RTMPIngestServer
    var reader = RTMPChunkReader()
    var tcURL = ""
    var stream: String?
    var output: FLVFeedWriter?
    var outChunkSize = 4096
    /// A publish is being decided (the authorizer may take a bcrypt's time).
    var deciding = false

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
            guard String(decoding: appName.utf8.drop { $0 == 0x2F }.reversed().drop { $0 == 0x2F }.reversed(), as: UTF8.self) == server.settings.app else {
                server.refused("app", peer: context.remoteAddress?.description)
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
            guard stream == nil, !deciding else { return }
            let raw = args.count > 1 ? (args[1].string ?? "") : ""
            let (name, query) = Self.split(raw)
            let tc = Self.split(tcURL).query
            let isNew = server.engine.settings(name) == nil && server.settings.autoCreate
            if isNew {
                guard RTMPIngestServer.isNewStreamName(name) else {
                    server.refused("bad_name", stream: name, peer: context.remoteAddress?.description)
                    status(context, "error", "NetStream.Publish.BadName", "stream names may use letters, digits, - and _ only")
                    context.flush()
                    throw Refused(description: "bad stream name")
                }
            } else if server.engine.settings(name) == nil || !server.points.streams.contains(name) {
                server.refused("unknown_stream", stream: name, peer: context.remoteAddress?.description)
                status(context, "error", "NetStream.Publish.BadName", "no such stream")
                context.flush()
                throw Refused(description: "publish to an unknown stream")
            }
            // The authorizer decides: a user (`?user=…&pass=…`, bcrypt, off the event loop), the
            // stream's key (`?key=…`, or OBS's stream key `NAME?key=…`), or nothing. Media sent
            // meanwhile is dropped, as before any publish.
            let credentials: AccessCredentials
            if let user = query["user"] ?? tc["user"], let pass = query["pass"] ?? tc["pass"] {
                credentials = .userPassword(user: user, password: pass)
            } else if let key = query["key"] ?? tc["key"] {
                credentials = .publishKey(key)
            } else {
                credentials = .none
            }
            let request = AccessRequest(credentials, .publish, stream: name, door: .rtmp, peer: context.remoteAddress?.ipAddress ?? "unknown")
            deciding = true
            let server = self.server
            let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            Task {
                let decision = await server.authorizer.authorize(request)
                if case .allowed = decision, isNew {
                    // Made once: a concurrent first publish of the same name finds it made (its
                    // add fails as a duplicate, which is fine); anything else is said.
                    let settings = server.engine.configuration.ingest.autoCreated(name)
                    do { try await server.engine.add(settings) } catch let error where server.engine.settings(name) == nil {
                        server.logger.warning("rtmp: could not make the stream for a first publish", metadata: ["stream.name": "\(name)", "error": "\(error)"])
                    } catch {}
                }
                loop.eventLoop.execute {
                    let (session, context) = loop.value
                    session.deciding = false
                    // Gone while it was decided: nothing to begin (a begun feed would hold the
                    // stream busy with no connection to end it).
                    guard context.channel.isActive else { return }
                    do {
                        switch decision {
                        case .allowed: try session.begin(name, context)
                        case .limited: try session.refuse(name, reason: "limited", "too many wrong keys or passwords; try again later", context)
                        case .unauthorized, .forbidden: try session.refuse(name, reason: "key", "wrong or missing key", context)
                        }
                    } catch {
                        context.close(promise: nil)
                    }
                    context.flush()
                }
            }
        case "deleteStream":
            finish()
        default:
            break
        }
    }

    private func refuse(_ name: String, reason: String, _ description: String, _ context: ChannelHandlerContext) throws -> Never {
        server.refused(reason, stream: name, peer: context.remoteAddress?.description)
        status(context, "error", "NetStream.Publish.BadName", description)
        context.flush()
        throw Refused(description: "\(description) for \(name)")
    }

    private func begin(_ name: String, _ context: ChannelHandlerContext) throws {
            switch server.points.beginFeed(name) {
            case .failure(.alreadyPublishing):
                server.refused("busy", stream: name, peer: context.remoteAddress?.description)
                status(context, "error", "NetStream.Publish.BadName", "stream is already publishing")
                context.flush()
                throw Refused(description: "\(name) already has a publisher")
            case .failure(let f):
                status(context, "error", "NetStream.Publish.Failed", "cannot start")
                context.flush()
                throw Refused(description: "\(name): \(f)")
            case .success(let feed):
                stream = name
                output = FLVFeedWriter(feed: feed)
                server.logger.info("rtmp ingest: publishing", metadata: ["stream": "\(name)"])
                server.accepted(stream: name, peer: context.remoteAddress?.description)
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

/// A publisher's media as FLV tags into the stream's feed (`FLVFeed`), which the stream's
/// ingest thread reads in memory. A push never waits: a reader gone, or too far behind, drops
/// the publisher.
final class FLVFeedWriter {
    // Used only on the session's event loop.
    let feed: FLVFeed
    private var started = false
    private(set) var written = 0

    init(feed: FLVFeed) { self.feed = feed }

    /// Before the first tag: which streams to expect (the FLV header; the demuxer that probes
    /// them waits for every stream the header announces). Known from the metadata, else a guess
    /// from the first media tag.
    private func start(first tagType: UInt8, payload: [UInt8]) {
        if tagType == 18, let values = try? AMF0.decodeAll(payload), let meta = values.dropFirst().first {
            let flags: UInt8 = (meta["videocodecid"] != nil ? 1 : 0) | (meta["audiocodecid"] != nil ? 4 : 0)
            // Only what the metadata says is an announcement: a guess from the first tag must
            // still let a second stream turn up while the reader probes.
            feed.start(headerFlags: flags == 0 ? 5 : flags, announced: flags != 0)
        } else {
            feed.start(headerFlags: tagType == 8 ? 4 : 1, announced: false)
        }
    }

    func write(tagType: UInt8, timestamp: UInt32, payload: [UInt8]) throws {
        if !started {
            started = true
            start(first: tagType, payload: payload)
        }
        guard feed.push(type: tagType, timestamp: timestamp, payload: payload) else {
            throw RTMPSession.Refused(description: feed.isAbandoned ? "the stream's reader is gone" : "the stream's reader stopped taking media")
        }
        written += 15 + payload.count
    }

    func close() { feed.finish() }
}
