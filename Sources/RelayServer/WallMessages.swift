import Foundation

/// The wall's text messages as types: what a page sends (`WallClientMessage`), what the server
/// sends (`WallServerMessage`). JSON with snake_case keys, as the page reads them; a message
/// that is not one of these is answered with an error message, never guessed at.
struct WallClientMessage: Decodable {
    /// The tiles on screen now (an empty list for a background tab).
    var watch: [String]?
    /// What the page can decode (`avc1`).
    var decoders: [String]?
    /// This viewer's policy for its H.264 tiles; a bad one is refused on its own (the page is
    /// told why) while the rest of the message still applies.
    var policy: Result<PolicyPatch.Body, PolicyPatch.PatchError>?
    /// The page's decoder failed on this stream: send JPEG.
    var fallback: String?
    /// The tile the operator listens to ("" for none): its audio is sent with its pictures.
    var audio: String?
    /// Each watched tile's height on screen in device pixels: the wall sends the smallest
    /// rendition at least that tall (the stream itself when none is).
    var sizes: [String: Int]?
    /// The page fell behind on this tile (its message queue or decoder): skip its queue to the
    /// next keyframe as well.
    var behind: String?
    /// Tiles to play at full quality whatever their size (the selected one, the single view,
    /// full screen): the main stream, never the sub stream.
    var main: [String]?
    /// For each tile, how many of its binary frames the page has handled over the session: the
    /// server keeps at most `WallSession.pageWindow` unhandled in flight.
    var acks: [String: UInt64]?

    private enum Keys: String, CodingKey { case watch, decoders, policy, fallback, audio, sizes, behind, main, acks }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        watch = try c.decodeIfPresent([String].self, forKey: .watch)
        decoders = try c.decodeIfPresent([String].self, forKey: .decoders)
        fallback = try c.decodeIfPresent(String.self, forKey: .fallback)
        audio = try c.decodeIfPresent(String.self, forKey: .audio)
        sizes = try c.decodeIfPresent([String: Int].self, forKey: .sizes)
        behind = try c.decodeIfPresent(String.self, forKey: .behind)
        main = try c.decodeIfPresent([String].self, forKey: .main)
        acks = try c.decodeIfPresent([String: UInt64].self, forKey: .acks)
        if c.contains(.policy), !(try c.decodeNil(forKey: .policy)) {
            do {
                policy = .success(try c.decode(PolicyPatch.Body.self, forKey: .policy))
            } catch {
                policy = .failure(PolicyPatch.PatchError(PolicyPatch.describe(error)))
            }
        }
    }
}

enum WallServerMessage: Encodable {
    struct Tile: Encodable {
        var name: String
        var slot: Int
        var title: String
        var state: String
        var preview: Bool
        var hls: Bool
        var codec: String?
        var attempt: Int?
        var lostSince: Double?

        enum CodingKeys: String, CodingKey {
            case name, slot, title, state, preview, hls, codec, attempt
            case lostSince = "lost_since"
        }
    }

    struct TileStats: Encodable {
        var path: String
        var sent: Int
        var bytes: Int
        var dropped: Int
        var droppedByReason: [String: Int]?
        var queued: Int?
        var state: String?
        var fpsIn: Double?

        enum CodingKeys: String, CodingKey {
            case path, sent, bytes, dropped, queued, state
            case droppedByReason = "dropped_by_reason"
            case fpsIn = "fps_in"
        }
    }

    case hello(streams: [Tile], viewer: String)
    /// `rendition`: the rung the tile plays (`240p 426x240`); nil: the stream itself.
    case path(stream: String, path: String, why: String, rendition: String?)
    /// `by` and `session`: a talk event's talker and its session (the id in its `Location`).
    case event(stream: String, kind: String, at: Double, attempt: Int?, connection: Int?, detail: String?, by: String? = nil, session: String? = nil)
    case stats(tiles: [String: TileStats])
    case error(message: String)

    private enum Keys: String, CodingKey {
        case type, streams, viewer, stream, path, why, kind, at, attempt, connection, detail, tiles, message, rendition, by, session
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case .hello(let streams, let viewer):
            try c.encode("hello", forKey: .type)
            try c.encode(streams, forKey: .streams)
            try c.encode(viewer, forKey: .viewer)
        case .path(let stream, let path, let why, let rendition):
            try c.encode("path", forKey: .type)
            try c.encode(stream, forKey: .stream)
            try c.encode(path, forKey: .path)
            try c.encode(why, forKey: .why)
            try c.encodeIfPresent(rendition, forKey: .rendition)
        case .event(let stream, let kind, let at, let attempt, let connection, let detail, let by, let session):
            try c.encode("event", forKey: .type)
            try c.encode(stream, forKey: .stream)
            try c.encode(kind, forKey: .kind)
            try c.encode(at, forKey: .at)
            try c.encodeIfPresent(attempt, forKey: .attempt)
            try c.encodeIfPresent(connection, forKey: .connection)
            try c.encodeIfPresent(detail, forKey: .detail)
            try c.encodeIfPresent(by, forKey: .by)
            try c.encodeIfPresent(session, forKey: .session)
        case .stats(let tiles):
            try c.encode("stats", forKey: .type)
            try c.encode(tiles, forKey: .tiles)
        case .error(let message):
            try c.encode("error", forKey: .type)
            try c.encode(message, forKey: .message)
        }
    }

    /// The message's JSON. Keys are spelled out in CodingKeys: a key strategy would rewrite the
    /// stream names that key `tiles` too.
    var text: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
