import Hummingbird
import Relay
import Foundation

/// `/api/streams…`: every stream's state and outputs; run-time policy switches.
enum APIRoutes {
    static func add(to router: Router<BasicRequestContext>, engine: RelayEngine) {
        router.get("/api/streams") { _, _ in
            try HTTPResponses.json(engine.hubs.keys.sorted().compactMap { engine.hubs[$0].map { StreamView(hub: $0, engine: engine) } })
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
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
                return try HTTPResponses.jsonError(.badRequest, "expected a JSON object such as {\"ordering\":\"arrival\",\"freshness\":\"latest\",\"depth\":1}")
            }
            switch PolicyPatch.apply(object, to: output.status.policy) {
            case .failure(let error): return try HTTPResponses.jsonError(.badRequest, error.message)
            case .success(let policy):
                guard output.setPolicy(policy) else {
                    return try HTTPResponses.jsonError(.conflict, "the \(output.kind.rawValue) output \"\(sink)\" keeps its own policy")
                }
                return try HTTPResponses.json(StreamView(hub: hub, engine: engine))
            }
        }
    }
}
