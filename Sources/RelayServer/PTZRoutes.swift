import Foundation
import Hummingbird
import Relay
import RelayAPI
import Wire

/// PTZ of a stream whose source is an ONVIF camera (`onvif://`): `POST /api/streams/{name}/ptz`
/// moves, stops, goes to and sets presets; `GET …/ptz` says where the camera points and lists
/// its presets, `GET …/ptz/presets` the presets alone. Every route needs `ptz` on the stream
/// (AccessRoutes), and every command is a line of the audit log. A camera's failure is a 502
/// with one line naming the camera, never its credentials; a camera that takes longer than
/// 20 s in all (resolving it included) is a 504.
enum PTZRoutes {
    /// The longest continuous move one command starts: a client that is gone (a closed wall
    /// page, a lost connection) cannot leave the camera turning for longer.
    static let longestMove = 60.0
    /// A move's length when the command gives none.
    static let defaultMove = 5.0

    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine) {
        router.get("/api/streams/:name/ptz") { _, context in
            let name = try context.parameters.require("name")
            return try await bounded { switch await steer(name, engine: engine) {
            case .refused(let r): return r
            case .ready(let client, let ptz):
                async let position = client.position(ptz)
                async let presets = client.presets(ptz)
                let (p, list) = await (position, presets)
                if case .failure(let e) = list { return try HTTPResponses.jsonError(.badGateway, e.description) }
                let where_ = (try? p.get()).flatMap { $0 }.map { PTZPosition(pan: $0.pan, tilt: $0.tilt, zoom: $0.zoom) }
                return try HTTPResponses.json(PTZStatus(stream: name, profile: ptz.profile, position: where_, presets: view((try? list.get()) ?? [])))
            } }
        }

        router.get("/api/streams/:name/ptz/presets") { _, context in
            let name = try context.parameters.require("name")
            return try await bounded { switch await steer(name, engine: engine) {
            case .refused(let r): return r
            case .ready(let client, let ptz):
                switch await client.presets(ptz) {
                case .success(let list): return try HTTPResponses.json(view(list))
                case .failure(let e): return try HTTPResponses.jsonError(.badGateway, e.description)
                }
            } }
        }

        router.post("/api/streams/:name/ptz") { request, context in
            let name = try context.parameters.require("name")
            let data = try await request.body.collect(upTo: 4096)
            guard let command = try? RelayAPI.decoder.decode(PTZCommand.self, from: Data(data.readableBytesView)) else {
                return try HTTPResponses.jsonError(.badRequest, "expected {\"action\": move|stop|goto|set, \"pan\", \"tilt\", \"zoom\" (−1…1), \"timeout\" (s), \"preset\" (goto), \"name\" (set)}")
            }
            if let problem = check(command) { return try HTTPResponses.jsonError(.badRequest, problem) }
            let detail: String
            switch command.action {
            case .move:
                detail = "move pan \(command.pan ?? 0) tilt \(command.tilt ?? 0) zoom \(command.zoom ?? 0) for \(min(command.timeout ?? defaultMove, longestMove)) s at most"
            case .stop: detail = "stop"
            case .goto: detail = "go to preset \(command.preset ?? "")"
            case .set: detail = "set preset \(command.name ?? "")"
            }
            let answer = await within(longestWait) { () -> Outcome in
                switch await steer(name, engine: engine) {
                case .refused(let r): return .refused(r)
                case .ready(let client, let ptz): return .done(await run(command, client, ptz))
                }
            }
            let outcome: String
            switch answer {
            case .refused(let r)?: return r
            case .done(.success(let r))?: outcome = r.preset.map { " (preset \($0))" } ?? ""
            case .done(.failure(let e))?: outcome = ": failed, \(e.detail)"
            case nil: outcome = ": no answer within \(Int(longestWait)) s"
            }
            if let catalog = engine.catalog {
                await catalog.audit(RecordingRoutes.audit(.ptz, context, stream: name, detail: detail + outcome), logger: context.logger)
            }
            switch answer {
            case .done(.success(let r))?: return try HTTPResponses.json(r)
            case .done(.failure(let e))?: return try HTTPResponses.jsonError(.badGateway, e.description)
            default: return try HTTPResponses.jsonError(.gatewayTimeout, "the camera did not answer within \(Int(longestWait)) s")
            }
        }
    }

    enum Outcome: Sendable {
        case refused(Response)
        case done(Result<PTZResult, ONVIFError>)
    }

    static func run(_ command: PTZCommand, _ client: ONVIFClient, _ ptz: ONVIFClient.PTZ) async -> Result<PTZResult, ONVIFError> {
        switch command.action {
        case .move:
            return await client.move(ptz, pan: command.pan ?? 0, tilt: command.tilt ?? 0, zoom: command.zoom ?? 0,
                                     timeout: min(command.timeout ?? defaultMove, longestMove)).map { PTZResult(action: .move) }
        case .stop:
            return await client.stop(ptz).map { PTZResult(action: .stop) }
        case .goto:
            let token = command.preset ?? ""
            return await client.goToPreset(ptz, token: token).map { PTZResult(action: .goto, preset: token) }
        case .set:
            return await client.setPreset(ptz, name: command.name ?? "").map { PTZResult(action: .set, preset: $0) }
        }
    }

    /// The longest a PTZ request waits for the camera, resolving it included (a camera that
    /// answers slowly or with a refusal after each of its calls): then 504.
    static let longestWait = 20.0

    /// `body`'s value, or nil when it takes longer than `seconds` (it is cancelled then: the
    /// ONVIF calls in it are AsyncHTTPClient requests, which stop on cancellation).
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask { try? await Task.sleep(for: .seconds(seconds)); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// `body`'s answer, or a 504 after `longestWait`.
    static func bounded(_ body: @escaping @Sendable () async throws -> Response) async throws -> Response {
        let answer = await within(longestWait) { () -> Response? in try? await body() }
        return try (answer ?? nil) ?? HTTPResponses.jsonError(.gatewayTimeout, "the camera did not answer within \(Int(longestWait)) s")
    }

    /// A command's fields checked: velocities in −1…1, a positive timeout, a preset token for
    /// `goto` and a name for `set` (each printable, at most 64 bytes).
    static func check(_ c: PTZCommand) -> String? {
        for (axis, v) in [("pan", c.pan), ("tilt", c.tilt), ("zoom", c.zoom)] {
            if let v, !(v.isFinite && (-1...1).contains(v)) { return "\(axis): a number from -1 to 1" }
        }
        if let t = c.timeout, !(t.isFinite && t > 0) { return "timeout: seconds, more than 0" }
        func text(_ s: String?) -> Bool {
            guard let s, !s.isEmpty, s.utf8.count <= 64 else { return false }
            return !s.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        }
        if c.action == .goto, !text(c.preset) { return "preset: the preset's token (1 to 64 printable bytes)" }
        if c.action == .set, !text(c.name) { return "name: the new preset's name (1 to 64 printable bytes)" }
        return nil
    }

    static func view(_ presets: [ONVIFAnswer.Preset]) -> [PTZPreset] {
        presets.map { p in
            PTZPreset(token: p.token, name: p.name, position: p.position.map { PTZPosition(pan: $0.pan, tilt: $0.tilt, zoom: $0.zoom) })
        }
    }

    /// The stream's camera and its PTZ service, or the answer that says why there is none.
    enum Steer {
        case ready(ONVIFClient, ONVIFClient.PTZ)
        case refused(Response)
    }

    static func steer(_ name: String, engine: RelayEngine) async -> Steer {
        func fail(_ status: HTTPResponse.Status, _ message: String) -> Steer {
            .refused((try? HTTPResponses.jsonError(status, message)) ?? Response(status: status))
        }
        guard let stream = engine.settings(name) else { return fail(.notFound, "no stream \(name)") }
        guard let client = engine.onvifCameras.client(for: stream.source) else { return fail(.conflict, "stream \(name) has no PTZ: its source is not an ONVIF camera (onvif://)") }
        let camera: ONVIFCamera
        switch await engine.onvifCameras.camera(for: stream.source) {
        case .success(let c): camera = c
        case .failure(let e): return fail(.badGateway, e.description)
        }
        guard let service = camera.ptzService else { return fail(.conflict, "stream \(name): the camera's profile \(camera.main.token) has no PTZ") }
        return .ready(client, ONVIFClient.PTZ(service: service, profile: camera.main.token))
    }
}
