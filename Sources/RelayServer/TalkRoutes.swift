import Access
import Foundation
import Hummingbird
import MediaCore
import HTTPTypes
import Relay
import RelayAPI
import WebRTC

/// Talk back (push-to-talk): `POST /streams/{name}/talk` takes a WHIP-style offer whose audio
/// (Opus) goes to the stream's talk path (its camera's ONVIF backchannel, or its WHIP field
/// unit), answered 201 with the SDP answer and the session's `Location`; `DELETE` there stops.
/// One talker per stream: another is refused 409 naming who holds it, unless `admin` on the
/// stream takes the floor from a talker with only `talk`. `GET` says whether the stream can be
/// talked to and who talks now. All need `talk` on the stream.
enum TalkRoutes {
    static func add(to router: Router<RelayRequestContext>, engine: RelayEngine, webrtc: WebRTCServer) {
        router.get("/streams/:name/talk") { _, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "no stream \"\(name.prefix(100))\"") }
            let target = hub.talkTarget
            return try HTTPResponses.json(TalkState(stream: name, available: target != nil, format: target.map { "\($0.talkFormat)" },
                                                    talker: engine.talk.holder(name).map { .init(who: $0.who, since: $0.started) }))
        }
        router.post("/streams/:name/talk") { request, context in
            let name = try context.parameters.require("name")
            guard let hub = engine.hubs[name] else { return try HTTPResponses.jsonError(.notFound, "no stream \"\(name.prefix(100))\"") }
            guard (request.headers[.contentType] ?? "").lowercased().hasPrefix("application/sdp") else {
                return try HTTPResponses.jsonError(.unsupportedMediaType, "a talk offer is application/sdp")
            }
            let body = try await request.body.collect(upTo: WHEPRoutes.maxOffer)
            let offer = String(decoding: body.readableBytesView, as: UTF8.self)
            // A bad offer takes no floor.
            do throws(WebRTCServer.OfferError) { try WebRTCServer.checkTalk(offer: offer) } catch { return try WHEPRoutes.refusal(error) }
            let who = context.identity?.name ?? "anonymous"
            // Without `auth` everyone is anonymous and equal; `admin` on the stream outranks `talk`.
            let priority = context.identity?.may(.admin, stream: name) == true ? 2 : 1
            // The talker is named by its WebRTC session's id: its Location, and its events.
            let talker = TalkService.Talker(id: WebRTCServer.sessionID(), stream: name, who: who,
                                            address: AccessMiddleware.peer(context.remoteAddress), priority: priority)
            let talk: TalkService.Talk
            do throws(TalkService.Refusal) {
                talk = try engine.talk.begin(talker, hub: hub)
            } catch {
                switch error {
                case .busy(let holder):
                    return try HTTPResponses.jsonError(.conflict, "\(holder.who) is talking to \(name) (since \(holder.started.formatted(.iso8601)))")
                case .noPath(let why):
                    return try HTTPResponses.jsonError(.unprocessableContent, why)
                }
            }
            let session = talk.session
            let service = engine.talk
            do throws(WebRTCServer.OfferError) {
                let (id, answer) = try webrtc.talk(offer: offer, stream: name, id: talker.id, talker: who, client: talker.address ?? "-",
                                                   receive: { session.receive($0) },
                                                   onClose: { service.end(talker.id, stream: name, reason: "the talker left (released, or the connection ended)") })
                service.onStop(talker.id, stream: name) { _ = webrtc.end(id: id, stream: name, kind: .talk) }
                return WHEPRoutes.created(answer, location: "/streams/\(name)/talk/\(id)", ice: webrtc.iceServers(for: who))
            } catch {
                service.end(talker.id, stream: name, reason: "the offer was refused: \(error)")
                return try WHEPRoutes.refusal(error)
            }
        }
        router.delete("/streams/:name/talk/:session") { _, context in
            let name = try context.parameters.require("name"), id = try context.parameters.require("session")
            guard webrtc.end(id: id, stream: name, kind: .talk) else { return try HTTPResponses.jsonError(.notFound, "no such talk session") }
            return Response(status: .ok)
        }
        for path in ["/streams/:name/talk", "/streams/:name/talk/:session"] {
            router.on(RouterPath(path), method: .options) { _, _ in WHEPRoutes.preflight(methods: "GET, POST, DELETE, OPTIONS") }
        }
    }
}
