public import Access
public import Relay
public import Logging
import MediaCore
import NIOCore
public import NIOSSL
import Foundation

/// The one-port RTMP ingest (`ingest.rtmp`): many publishers at once, each at
/// `rtmp://host:port/APP/STREAM` (or OBS's server + stream key `STREAM?key=…`), checked against
/// the keys before the first media byte is taken, and fed to their stream through
/// `PublishPoints` as FLV tags in memory (`FLVFeed`). A second publisher of a live stream is
/// refused; one that drops and returns resumes the same stream.
public final class RTMPIngestServer: Sendable {
    let settings: IngestSettings.RTMPIngest
    let engine: RelayEngine
    var points: PublishPoints { engine.publishPoints }
    let logger: Logger
    private let listener = TCPListener()
    /// Refusals (`app`, `unknown_stream`, `bad_name`, `key`, `limited`, `busy`) and acceptances.
    let publishers: PublisherEvents
    /// Publishers refused so far, by reason.
    public var refusals: [String: Int] { publishers.refusals }

    /// Decides every publisher: users, stream keys, anonymous publishing.
    let authorizer: Authorizer

    /// RTMPS: TLS in front of every connection (`ingest.rtmp.tls`).
    let tls: NIOSSLContext?

    public init(settings: IngestSettings.RTMPIngest, engine: RelayEngine, logger: Logger, tls: NIOSSLContext? = nil, authorizer: Authorizer) {
        self.tls = tls
        self.settings = settings
        self.engine = engine
        self.logger = logger
        self.authorizer = authorizer
        publishers = PublisherEvents(events: engine.events, protocolName: settings.tls ? "rtmps" : "rtmp")
    }

    /// Binds and starts accepting; returns the bound port.
    public func start() async throws -> Int {
        try await listener.start(host: settings.host, port: settings.port) { channel in
            if let tls = self.tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            // Silent connections (never handshaking, or a publisher gone quiet) are closed.
            try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(10)))
            try channel.pipeline.syncOperations.addHandler(RTMPSession(server: self))
        }
    }

    public func stop() async { await listener.stop() }

    /// Counts a refusal and tells it as a `publisher_refused` event (the stream's name as the
    /// publisher gave it; empty before it named one).
    func refused(_ reason: String, stream: String = "", peer: String?) { publishers.refused(reason, stream: stream, peer: peer) }

    /// A publisher was taken: a `publisher_accepted` event.
    func accepted(stream: String, peer: String?) { publishers.accepted(stream: stream, peer: peer) }

    /// A name a publisher may make a stream with (`auto_create`): a stream name of at most 64
    /// characters.
    static func isNewStreamName(_ name: String) -> Bool { name.count <= 64 && Configuration.isStreamName(name) }
}
