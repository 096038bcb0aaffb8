public import Relay
import Demux
import MediaCore
import Mux
import Logging

/// One SRT reader's copy of a stream (`streamid=read:NAME`): an output like every viewer's (kind
/// `srt`, listed by the API, its policy switchable there, drops counted by reason), whose
/// packets are muxed into MPEG-TS as they come and sent at once in messages of seven TS
/// packets, on the caller's own thread. A reader that stops taking is skipped to the next
/// keyframe (`slow_viewer`), never slowing the stream or anyone else. Its timeline is
/// continuous across the source's reconnects; a reconnect that changes the tracks ends the
/// session (the reader connects again and reads the new ones).
final class SRTReader: PacketOutput, Sendable {
    /// A reader gets at most a second of backlog, as an RTSP client does.
    static let defaultPolicy = SinkPolicy(ordering: .arrival, freshness: .maxAge(milliseconds: 1000))
    /// How long libsrt's send buffer may stay full before the reader counts as behind.
    static let sendDeadline: Duration = .milliseconds(500)

    let handle: OutputHandle

    init(hub: StreamHub, name: String) {
        handle = hub.attachOutput(name, kind: .srt, policy: Self.defaultPolicy, taking: .blocking(batching: false))
        hub.register(self)
    }

    func start() {}
    func stop() async { handle.queue.close() }

    /// Sends the stream to `caller` until it leaves, the stream ends or changes its tracks, or
    /// `running` says stop; the reason, for the log.
    func serve(_ caller: SRTConnection, hub: StreamHub, running: () -> Bool) -> String {
        defer {
            handle.queue.close()
            handle.detach()
        }
        handle.setState(.running)
        hub.requestKeyframe()
        let timeline = PacketTimeline()
        var packetizer: MPEGTSPacketizer?
        var layout: [String]?
        while running() {
            guard let item = handle.pop(timeout: 0.25) else {
                if handle.queue.isClosed { return "the stream ended" }
                if !caller.isConnected { return "the reader left" }
                continue
            }
            if handle.queue.takeDiscontinuity() { timeline.restart() }
            guard let at = timeline.place(item) else { continue }
            if packetizer == nil {
                do {
                    packetizer = try MPEGTSPacketizer(streams: at.epoch.streams, title: hub.name, framing: .raw)
                    layout = RTPFeed.layout(at.epoch)
                } catch {
                    handle.report(problem: error.description)
                    return "its packets could not be muxed: \(error.description)"
                }
            } else if at.newEpoch && RTPFeed.layout(at.epoch) != layout {
                return "the source came back with other tracks"
            }
            let messages: [RTPPacketizer.Datagram]
            do {
                messages = try packetizer?.packetize(at.packet, pts: at.pts, dts: at.dts) ?? []
            } catch {
                handle.countError()
                continue
            }
            for message in messages {
                switch caller.send(message.bytes, timeout: Self.sendDeadline) {
                case .sent: continue
                case .stalled:
                    // Behind: what waits is stale; the rest of this picture goes too.
                    handle.fellBehind()
                    timeline.restart()
                case .ended(let why):
                    return why
                }
                break
            }
        }
        return "the server stopped"
    }
}
