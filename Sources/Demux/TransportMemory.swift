public import MediaCore
public import Logging
import Synchronization

/// RTSP with `transport: auto`, across the reconnections of one source: when UDP media stops
/// mid-session while the camera still answers on its RTSP port (a NAT that dropped its UDP
/// mappings, a firewall change), the next opens go straight to interleaved TCP, as FFmpeg's own
/// demuxer falls back when UDP never delivered. Without this the reconnect would wait for UDP
/// media again first (most of the open deadline) before trying TCP.
public final class TransportMemory: Sendable {
    private let preferTCP = Atomic<Bool>(false)
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Whether UDP was given up for this source.
    public var usesTCP: Bool { preferTCP.load(ordering: .relaxed) }

    /// The options for the next open: TCP once UDP was given up.
    public func options(_ o: SourceOptions, url: String) -> SourceOptions {
        guard o.transport == .auto, usesTCP, IngestSession.scheme(of: url) == "rtsp" else { return o }
        var x = o
        x.transport = .tcp
        return x
    }

    /// Watches an open source: a UDP session of an `auto` source whose reads time out while its
    /// server answers makes the next opens use TCP.
    public func watch(_ source: any PacketSource, options: SourceOptions, reachability: Reachability?) -> any PacketSource {
        guard options.transport == .auto, let s = source as? any RTSPTransportReporting, s.transportUsed == .udp, let reachability else { return source }
        return UDPWatch(inner: s, memory: self, reachability: reachability)
    }

    fileprivate func udpStopped(_ source: String) {
        if !preferTCP.exchange(true, ordering: .relaxed) {
            logger.warning("UDP media stopped while the server answers; reconnecting over TCP", metadata: ["source": "\(source)"])
        }
    }
}

/// An RTSP/UDP session, read through: a read timeout with the server still reachable is a UDP
/// path that broke.
final class UDPWatch: PacketSource {
    let inner: any RTSPTransportReporting
    let memory: TransportMemory
    let reachability: Reachability

    init(inner: any RTSPTransportReporting, memory: TransportMemory, reachability: Reachability) {
        self.inner = inner
        self.memory = memory
        self.reachability = reachability
    }

    var streams: [StreamInfo] { inner.streams }
    var formatName: String { inner.formatName }
    var interruptHandle: InterruptHandle { inner.interruptHandle }

    func readPacket() throws -> Packet? {
        do {
            return try inner.readPacket()
        } catch let e as IngestError where e.kind == .timedOut && !inner.interruptHandle.isInterrupted {
            if reachability.isReachable() { memory.udpStopped(inner.redactedURL) }
            throw e
        }
    }
}
