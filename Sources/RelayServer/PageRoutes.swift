import Hummingbird
import Relay

/// The pages: the operations page, one stream's viewer, a stream's metadata.
enum PageRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.get("/") { _, context in HTTPResponses.html(OpsPage.render(engine: engine, visible: context.mayRead)) }
        router.get("/streams/:name") { _, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
            return HTTPResponses.html(ViewerPage.render(name: name, status: hub.currentStatus))
        }
        router.get("/streams/:name/meta.json") { _, context in
            let name = try context.parameters.require("name")
            guard let meta = StreamMeta(engine: engine, name: name) else { return try HTTPResponses.jsonError(.notFound, "unknown stream \"\(name)\"") }
            return try HTTPResponses.json(meta)
        }
    }
}
