import Hummingbird
import Relay
import RelayAPI
import Wire
import Foundation
import HTTPTypes
import NIOCore
import Synchronization

/// `/api/streams…`: every stream's state and outputs; run-time policy switches.
enum APIRoutes {
    static let patchLock = Mutex(())

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.get("/api/streams") { _, context in
            // Only the streams this client may read.
            let hubs = engine.hubs
            return try HTTPResponses.json(hubs.keys.sorted().filter(context.mayRead).compactMap { hubs[$0].map { StreamView(hub: $0, engine: engine) } })
        }
        // Streams made, replaced and removed at run time (admin only where auth is on): the
        // configuration's keys as JSON, checked as the file is.
        router.post("/api/streams") { request, _ in
            let (object, problem) = try await body(request)
            guard var object else { return try HTTPResponses.jsonError(.badRequest, problem) }
            guard case .string(let name) = object.removeValue(forKey: "name") else { return try HTTPResponses.jsonError(.badRequest, "name: missing") }
            return try await change(engine, name: name, object: object, replace: false)
        }
        router.put("/api/streams/:name") { request, context in
            let name = try context.parameters.require("name")
            let (object, problem) = try await body(request)
            guard var object else { return try HTTPResponses.jsonError(.badRequest, problem) }
            if let n = object.removeValue(forKey: "name"), n != .string(name) { return try HTTPResponses.jsonError(.badRequest, "name: differs from the URL's") }
            return try await change(engine, name: name, object: object, replace: true)
        }
        router.delete("/api/streams/:name") { _, context in
            let name = try context.parameters.require("name")
            do throws(RelayEngine.ChangeError) {
                try await engine.remove(name)
                await engine.remember(StreamChange(stream: name, action: .remove))
                return Response(status: .noContent)
            } catch {
                return try HTTPResponses.jsonError(.notFound, error.description)
            }
        }
        // Server-sent events: every state change of the streams this client may read.
        router.get("/api/events") { _, context in
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            let events = engine.events.subscribe()
            let encoder = RelayAPI.eventEncoder
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: ": LiveRelay stream events\n\n"))
                for await e in events where context.mayRead(e.stream) {
                    let json = String(decoding: try encoder.encode(e), as: UTF8.self)
                    try await writer.write(ByteBuffer(string: "event: \(e.kind.rawValue)\ndata: \(json)\n\n"))
                }
                try await writer.finish(nil)
            })
        }
        router.get("/api/streams/:name") { _, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
            return try HTTPResponses.json(StreamView(hub: hub, engine: engine))
        }
        router.patch("/api/streams/:name/sinks/:sink") { request, context in
            let name = try context.parameters.require("name")
            let sink = try context.parameters.require("sink")
            guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
            guard let output = hub.output(named: sink) else {
                return try HTTPResponses.jsonError(.notFound, "stream \"\(name)\" has no output \"\(sink)\"")
            }
            let body = try await request.body.collect(upTo: 64 * 1024)
            let patch: PolicyPatch.Body
            switch PolicyPatch.body(Data(body.readableBytesView)) {
            case .success(let b): patch = b
            case .failure(let e): return try HTTPResponses.jsonError(.badRequest, e.message)
            }
            // One PATCH at a time: each reads the policy the last one left.
            let outcome: Result<Void, PolicyPatch.PatchError> = patchLock.withLock { _ in
                switch PolicyPatch.apply(patch, to: output.status.policy, batching: output.isBatching,
                                         pictures: output.kind == .preview || output.kind == .frames) {
                case .failure(let error): return .failure(error)
                case .success(let policy):
                    return output.setPolicy(policy) ? .success(()) : .failure(PolicyPatch.PatchError("the \(output.kind.rawValue) output \"\(sink)\" keeps its own policy", conflict: true))
                }
            }
            if case .failure(let error) = outcome { return try HTTPResponses.jsonError(error.conflict ? .conflict : .badRequest, error.message) }
            return try HTTPResponses.json(StreamView(hub: hub, engine: engine))
        }
    }

    static func body(_ request: Request) async throws -> ([String: ConfigValue]?, String) {
        let data = try await request.body.collect(upTo: 256 * 1024)
        // A stream's keys nest four levels at most; deeper is not a stream (and costs a decoder).
        guard JSONDepth.deepest(data.readableBytesView, limit: 32) <= 32 else {
            return (nil, "expected a JSON object with the configuration's stream keys (nested too deep)")
        }
        do {
            return (try JSONDecoder().decode([String: ConfigValue].self, from: Data(data.readableBytesView)), "")
        } catch {
            return (nil, "expected a JSON object with the configuration's stream keys")
        }
    }

    static func change(_ engine: RelayEngine, name: String, object: [String: ConfigValue], replace: Bool) async throws -> Response {
        let stream: Configuration.Stream
        do throws(ConfigError) {
            stream = try engine.parseStream(name: name, body: object)
        } catch {
            return try HTTPResponses.jsonError(.badRequest, error.description)
        }
        // A PUT that makes the stream answers 201, like a POST (RFC 9110 §9.3.4); one that replaces it, 200.
        let replaced = replace && engine.hubs[name] != nil
        do throws(RelayEngine.ChangeError) {
            if replaced { try await engine.replace(stream) } else { try await engine.add(stream) }
        } catch {
            return try HTTPResponses.jsonError(.conflict, error.description)
        }
        await engine.remember(StreamChange(stream: name, action: .put, body: object))
        guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.conflict, "stream \"\(name)\" was removed meanwhile") }
        return try HTTPResponses.json(StreamView(hub: hub, engine: engine), status: replaced ? .ok : .created)
    }
}
