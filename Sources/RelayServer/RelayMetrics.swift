public import Access
public import Prometheus
public import Relay
public import WebRTC
import MediaCore
import Synchronization

/// Prometheus metrics (swift-prometheus), refreshed from the engine's counters at each scrape.
/// Labels carry stream and sink names only, never a source URL.
public final class RelayMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let exported = Mutex<[String: Int]>([:])
    /// The authorizer whose failed logins are counted.
    private let authorizer: Authorizer?
    private let ingestRefusals = Mutex<[(String, @Sendable () -> [String: Int])]>([])
    private let webrtc = Mutex<(@Sendable () -> WebRTCFigures)?>(nil)

    public init(authorizer: Authorizer?) {
        self.authorizer = authorizer
    }

    /// Counts the publishers a one-port ingest refuses, by reason, as
    /// `liverelay_ingest_refused_total{protocol, reason}`.
    public func watchIngest(_ protocolName: String, refusals: @escaping @Sendable () -> [String: Int]) {
        ingestRefusals.withLock { $0.append((protocolName, refusals)) }
    }

    /// The WebRTC server's sessions, repairs and keyframe requests, as `liverelay_webrtc_*`.
    public func watchWebRTC(_ figures: @escaping @Sendable () -> WebRTCFigures) {
        webrtc.withLock { $0 = figures }
    }

    func counter(_ name: String, _ labels: [(String, String)], total: Int) {
        let key = name + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
        let delta = exported.withLock { e -> Int in
            let d = total - (e[key] ?? 0)
            if d > 0 { e[key] = total }
            return d
        }
        let c = registry.makeCounter(name: name, labels: labels)
        if delta > 0 { c.increment(by: Int64(delta)) }
    }

    func gauge(_ name: String, _ labels: [(String, String)], _ value: Double) {
        registry.makeGauge(name: name, labels: labels).set(value)
    }

    public func update(engine: RelayEngine) {
        if let f = engine.placement?.figures {
            gauge("liverelay_fleet_nodes_live", [], Double(f.liveNodes))
            gauge("liverelay_fleet_leases_held", [], Double(f.leasesHeld))
            counter("liverelay_fleet_catalog_queries_total", [], total: f.catalogQueries)
            for (event, n) in f.leaseEvents { counter("liverelay_fleet_lease_events_total", [("event", event)], total: n) }
        }
        if let access = authorizer {
            counter("liverelay_auth_failures_total", [], total: access.failedLogins)
            counter("liverelay_auth_rate_limited_total", [], total: access.rateLimited)
        }
        for (proto, refusals) in ingestRefusals.withLock({ $0 }) {
            for (reason, n) in refusals() { counter("liverelay_ingest_refused_total", [("protocol", proto), ("reason", reason)], total: n) }
        }
        if let f = webrtc.withLock({ $0 })?() {
            gauge("liverelay_webrtc_sessions", [("direction", "whep")], Double(f.viewers))
            gauge("liverelay_webrtc_sessions", [("direction", "whip")], Double(f.publishers))
            counter("liverelay_webrtc_ice_tcp_dropped_total", [], total: f.iceTCPDropped)
            counter("liverelay_webrtc_nack_resent_total", [], total: f.nackResent)
            counter("liverelay_webrtc_nack_unavailable_total", [], total: f.nackMissed)
            counter("liverelay_webrtc_keyframe_requests_total", [("direction", "from_viewers")], total: f.keyframeRequestsReceived)
            counter("liverelay_webrtc_keyframe_requests_total", [("direction", "to_publishers")], total: f.keyframeRequestsSent)
            counter("liverelay_webrtc_sender_reports_total", [], total: f.senderReports)
        }
        // Each hook's deliveries by result, and what waits.
        for h in engine.hooks?.statuses ?? [] {
            let l = [("hook", h.name), ("kind", h.kind.rawValue)]
            for (result, n) in h.results { counter("liverelay_hook_events_total", l + [("result", result)], total: n) }
            gauge("liverelay_hook_queue", l, Double(h.queued))
        }
        for (name, hub) in engine.hubs {
            let s = hub.currentStatus
            let l = [("stream", name)]
            gauge("liverelay_stream_up", l, s.state == .live ? 1 : 0)
            gauge("liverelay_stream_fps_in", l, s.fpsIn)
            counter("liverelay_stream_connections_total", l, total: s.connections)
            gauge("liverelay_stream_damaged", l, s.damaged ? 1 : 0)
            counter("liverelay_stream_damage_events_total", l, total: s.damageEvents)
            counter("liverelay_stream_rtp_packets_lost_total", l, total: s.rtpPacketsLost)
            // Link health: what the source's link says (RTP per track, an SRT publisher's
            // connection), the bitrate taken in, and the viewers by kind.
            counter("liverelay_stream_bytes_in_total", l, total: s.bytesIn)
            gauge("liverelay_stream_bitrate_in_bits_per_second", l, s.bitrateIn)
            for t in s.link?.tracks ?? [] {
                let tl = l + [("track", "\(t.index)"), ("media", t.media)]
                counter("liverelay_rtp_packets_received_total", tl, total: t.packetsReceived)
                counter("liverelay_rtp_packets_lost_total", tl, total: t.packetsLost)
                counter("liverelay_rtp_packets_reordered_total", tl, total: t.packetsReordered)
                gauge("liverelay_rtp_jitter_seconds", tl, t.jitter)
            }
            if let srt = s.link?.srt {
                gauge("liverelay_srt_round_trip_seconds", l, srt.roundTripMs / 1000)
                gauge("liverelay_srt_receive_bits_per_second", l, srt.receiveMbps * 1e6)
                counter("liverelay_srt_packets_received_total", l, total: srt.packetsReceived)
                counter("liverelay_srt_packets_lost_total", l, total: srt.packetsLost)
                counter("liverelay_srt_packets_retransmitted_total", l, total: srt.packetsRetransmitted)
                counter("liverelay_srt_packets_dropped_total", l, total: srt.packetsDropped)
            }
            let outputs = hub.outputs
            for kind in OutputKind.allCases where kind.isViewer {
                gauge("liverelay_stream_viewers", l + [("kind", kind.rawValue)], Double(outputs.count { $0.kind == kind }))
            }
            if let p = s.arrivalToDecoded.p50Ms { gauge("liverelay_arrival_to_decoded_ms", l + [("quantile", "0.5")], p) }
            if let p = s.arrivalToDecoded.p99Ms { gauge("liverelay_arrival_to_decoded_ms", l + [("quantile", "0.99")], p) }
            if let h = hub.outputs.lazy.compactMap({ $0 as? HLSSegmenter }).first {
                if let p = h.pusher?.stats {
                    gauge("liverelay_hls_push_up", l, p.state == .retrying || p.state == .refused ? 0 : 1)
                    gauge("liverelay_hls_push_queue_bytes", l, Double(p.queuedBytes))
                    counter("liverelay_hls_push_sent_total", l, total: p.sent)
                    counter("liverelay_hls_push_failures_total", l, total: p.failures)
                    counter("liverelay_hls_push_rejected_total", l, total: p.rejected)
                    counter("liverelay_hls_push_dropped_total", l, total: p.dropped)
                }
                if let d = h.directoryWriter?.status {
                    counter("liverelay_hls_directory_errors_total", l, total: d.errors)
                    counter("liverelay_hls_directory_dropped_total", l, total: d.dropped)
                    gauge("liverelay_hls_directory_queue_bytes", l, Double(d.queuedBytes))
                }
            }
            // Each forward: up or away, its reconnects, what it sent and at what rate.
            for f in outputs.compactMap({ $0 as? any ForwardReporting }) {
                let fs = f.currentStatus
                let fl = l + [("sink", f.name)]
                gauge("liverelay_forward_up", fl, fs.state == .running ? 1 : 0)
                counter("liverelay_forward_reconnects_total", fl, total: fs.reconnects)
                counter("liverelay_forward_bytes_total", fl, total: fs.bytesSent)
                gauge("liverelay_forward_bits_per_second", fl, fs.bitrate)
            }
            // Every output of the registry, whatever its kind: packets and frames alike.
            for o in outputs.map(\.status) {
                let sl = l + [("sink", o.name), ("kind", o.kind.rawValue)]
                let c = o.counters
                counter("liverelay_sink_received_total", sl, total: c.received)
                counter("liverelay_sink_delivered_total", sl, total: c.delivered)
                counter("liverelay_sink_out_of_order_total", sl, total: c.outOfOrder)
                for reason in DropReason.allCases {
                    counter("liverelay_sink_dropped_total", sl + [("reason", reason.rawValue)], total: c.dropped[reason])
                }
                gauge("liverelay_sink_queue_depth", sl, Double(o.queueDepth))
                gauge("liverelay_sink_up", sl, o.state == .running ? 1 : 0)
                counter("liverelay_sink_errors_total", sl, total: o.errors)
                let d = o.arrivalToDelivered
                if let p = d.p50Ms { gauge("liverelay_sink_arrival_to_delivered_ms", sl + [("quantile", "0.5")], p) }
                if let p = d.p99Ms { gauge("liverelay_sink_arrival_to_delivered_ms", sl + [("quantile", "0.99")], p) }
            }
        }
    }
}
