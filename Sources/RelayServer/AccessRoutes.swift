import Access
import HTTPTypes

/// What a request needs, from its method and path: an action on a stream (nil stream: none in
/// particular), or nothing (`/healthz`). Media URLs also take `?token=`.
struct AccessRequirement: Equatable {
    var action: AccessAction?
    var stream: String?
    /// A URL a player fetches without headers of its own: `?token=` is accepted here only.
    var media = false
    /// A read endpoint: answered with CORS headers.
    var cors = false
    /// The door the authorizer is told: WHEP and WHIP are WebRTC's, the wall's socket a WebSocket.
    var door: AccessProtocol = .http

    static func of(method: HTTPRequest.Method, path: String) -> AccessRequirement {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch parts.first {
        case nil: return AccessRequirement(action: .read)
        case "healthz" where parts.count == 1: return AccessRequirement(action: nil)
        case "metrics" where parts.count == 1: return AccessRequirement(action: .metrics)
        // A public library (hls.js) for the watch page, and the page's own catch-up script: no
        // stream's and no secret.
        case "assets" where parts.count == 2 && (parts[1] == "hls.mjs" || parts[1] == "live-edge.js"): return AccessRequirement(action: nil)
        case "api":
            if parts.count == 2 && parts[1] == "events" && method == .get { return AccessRequirement(action: .read, cors: true) }
            if parts.count == 2 && parts[1] == "openapi.json" && method == .get { return AccessRequirement(action: .read, cors: true) }
            // The fleet's nodes and leases: who reads which stream.
            if parts.count == 2 && parts[1] == "fleet" && method == .get { return AccessRequirement(action: .read, cors: true) }
            // The ops wall's WebSocket: a browser cannot add headers to it, so `?token=` is taken.
            if parts.count == 2 && parts[1] == "wall" && method == .get { return AccessRequirement(action: .read, media: true, door: .websocket) }
            // The archive: its own action (watching live is not watching what was recorded).
            if parts.count == 3 && parts[1] == "recordings" && method == .get {
                return AccessRequirement(action: .playback, stream: parts[2], cors: true)
            }
            // The node's public key: what evidence is checked with.
            if parts.count == 2 && parts[1] == "keys" && method == .get { return AccessRequirement(action: .read, cors: true) }
            // Bookmarks and incidents: made and changed with `incident`, viewed with `playback`,
            // exported with `export`; each handler asks the same of every stream named.
            if parts.count == 2 && (parts[1] == "bookmarks" || parts[1] == "incidents") {
                return AccessRequirement(action: method == .get ? .playback : .incident, cors: true)
            }
            if parts.count == 3 && parts[1] == "incidents" { return AccessRequirement(action: method == .get ? .playback : .incident, cors: true) }
            if parts.count == 4 && parts[1] == "incidents" && parts[3] == "export" && method == .get { return AccessRequirement(action: .export, media: true, cors: true) }
            guard parts.count >= 2, parts[1] == "streams" else { return AccessRequirement(action: .admin) }
            let stream = parts.count >= 3 ? parts[2] : nil
            // Steering the camera: its moves, its presets and where it points.
            if parts.count >= 4, parts[3] == "ptz" { return AccessRequirement(action: .ptz, stream: stream, cors: true) }
            if method == .get { return AccessRequirement(action: .read, stream: stream, cors: true) }
            // Anything else on the API steers: PATCH a sink, and the run-time control to come.
            return AccessRequirement(action: .admin, stream: stream)
        // An incident reviewed in step: its page, opened from a link (`?token=` taken); the
        // handler asks `playback` of every camera it names.
        case "incidents" where parts.count == 2 && method == .get: return AccessRequirement(action: .playback, media: true)
        // HLS upload ingest: publishing, per stream.
        case "ingest": return AccessRequirement(action: .publish, stream: parts.count >= 2 ? parts[1] : nil)
        case "streams":
            let stream = parts.count >= 2 ? parts[1] : nil
            // WHEP and WHIP: a CORS preflight carries no credentials; the offer and its DELETE
            // need read (WHEP) or publish (WHIP, and the page that publishes).
            // Talk back: the offer, its DELETE and who holds the floor, by WebRTC (a preflight
            // carries no credentials).
            if parts.count >= 3, parts[2] == "talk" {
                if method == .options { return AccessRequirement(action: nil) }
                return AccessRequirement(action: .talk, stream: stream, cors: true, door: .webrtc)
            }
            if parts.count >= 3, parts[2] == "whep" || parts[2] == "whip" || parts[2] == "publish" {
                if method == .options { return AccessRequirement(action: nil) }
                return AccessRequirement(action: parts[2] == "whep" ? .read : .publish, stream: stream, media: true, cors: true,
                                         door: parts[2] == "publish" ? .http : .webrtc)
            }
            // The archive played or exported: a player fetches these without headers.
            if parts.count >= 3, ["recording.m3u8", "recording"].contains(parts[2]) {
                return AccessRequirement(action: .playback, stream: stream, media: true, cors: true)
            }
            if parts.count >= 3, ["recording.mp4", "recording.json"].contains(parts[2]) {
                return AccessRequirement(action: .export, stream: stream, media: true, cors: true)
            }
            let media = parts.count >= 3 && ["preview.mjpg", "snapshot.jpg", "hls", "watch"].contains(parts[2])
            return AccessRequirement(action: .read, stream: stream, media: media, cors: true)
        default:
            return AccessRequirement(action: .read)
        }
    }
}
