public import Yams
import Wire
import MediaCore
public import Demux
import Decode

extension Configuration.Stream {
    /// A stream's section (`streams.NAME`, `ingest.defaults`, an API body): every key checked,
    /// a problem named by its key path.
    init(config node: Node, name: String, path: String, _ r: Configuration.Reader, sources: SourceOpener) throws(ConfigError) {
        let file = r.file
        let m = try r.mapping(node, path, allowed: ["source", "transport", "rtsp_client", "hwaccel", "device", "decode_threads", "title", "listen", "realtime", "loop",
                                                    "open_timeout", "read_timeout", "preview", "hls",
                                                    "record", "forward", "description", "keywords", "measure", "publish_key", "srt_read_passphrase",
                                                    "on_demand", "on_demand_idle", "group", "renditions", "h264_fallback", "substream", "talk"])
        guard let src = m["source"] else { throw ConfigError(file: file, path: "\(path).source", problem: "missing") }
        var s = Configuration.Stream(name: name, source: try r.string(src, "\(path).source"))
        // `publish`: fed by a publisher on the one-port ingest (ingest.rtmp).
        if s.source == "publish" {
            s.source = Configuration.publishURL(stream: name)
        } else if let problem = sources.validate(url: s.source) {
            throw ConfigError(file: file, path: "\(path).source", problem: problem)
        }
        // A command that writes the stream runs while the stream is watched, unless told otherwise.
        if ExecSource.isExec(s.source) && m["on_demand"] == nil { s.onDemandIdle = 10 }
        if let o = m["on_demand"], try r.bool(o, "\(path).on_demand") {
            guard !s.source.hasPrefix("publish://") else {
                throw ConfigError(file: file, path: "\(path).on_demand", problem: "a publish stream is fed when its publisher comes; on_demand is for pulled sources")
            }
            s.onDemandIdle = 10
        }
        if let t = m["on_demand_idle"] {
            guard s.onDemandIdle != nil else { throw ConfigError(file: file, path: "\(path).on_demand_idle", problem: "needs on_demand: true") }
            s.onDemandIdle = try r.duration(t, "\(path).on_demand_idle", 1...86_400)
        }
        if let k = m["publish_key"] {
            s.publishKey = try r.string(k, "\(path).publish_key")
            guard !s.publishKey!.isEmpty else { throw ConfigError(file: file, path: "\(path).publish_key", problem: "empty") }
        }
        if let k = m["srt_read_passphrase"] {
            let phrase = try r.string(k, "\(path).srt_read_passphrase")
            guard (10...79).contains(phrase.utf8.count) else {
                throw ConfigError(file: file, path: "\(path).srt_read_passphrase", problem: "SRT passphrases are 10 to 79 characters")
            }
            s.srtReadPassphrase = phrase
        }
        if let t = m["title"] { s.title = try r.string(t, "\(path).title") }
        if let g = m["group"] {
            s.group = try r.string(g, "\(path).group")
            guard let group = s.group, !group.isEmpty, group.count <= 64 else { throw ConfigError(file: file, path: "\(path).group", problem: "1 to 64 characters") }
        }
        if let t = m["description"] { s.description = try r.string(t, "\(path).description") }
        if let t = m["renditions"] { s.renditions = try Configuration.renditions(t, path: "\(path).renditions", r) }
        if let t = m["h264_fallback"], let rung = try RenditionSettings.fallback(t, path: "\(path).h264_fallback", r) {
            guard !s.renditions.contains(where: { $0.name == rung.name }) else {
                throw ConfigError(file: file, path: "\(path).h264_fallback", problem: "a rendition is named \"\(rung.name)\" already")
            }
            s.renditions.append(rung)
        }
        if let t = m["keywords"] { s.keywords = try r.strings(t, "\(path).keywords") }
        if let h = m["hls"] { s.hls = try HLSSettings(config: h, path: "\(path).hls", r) }
        if let rec = m["record"] { s.record = try RecordSettings(config: rec, path: "\(path).record", r) }
        if let f = m["forward"] { s.forward = try ForwardTarget.list(f, path: "\(path).forward", r) }
        if let t = m["transport"] { s.sourceOptions.transport = try r.choice(t, "\(path).transport", SourceOptions.Transport.self) }
        if let t = m["rtsp_client"] { s.sourceOptions.rtspClient = try r.choice(t, "\(path).rtsp_client", SourceOptions.RTSPClient.self) }
        if let t = m["hwaccel"] { s.decoderOptions.hardware = try r.choice(t, "\(path).hwaccel", HardwareAcceleration.self) }
        if let t = m["device"] { s.decoderOptions.devicePath = try r.string(t, "\(path).device") }
        if let t = m["decode_threads"] { s.decoderOptions.sliceThreads = Int(try r.number(t, "\(path).decode_threads", 1...16)) }
        if let t = m["listen"] { s.sourceOptions.listen = try r.bool(t, "\(path).listen") }
        if let t = m["realtime"] { s.sourceOptions.realtime = try r.bool(t, "\(path).realtime") }
        if let t = m["loop"] { s.sourceOptions.loop = try r.bool(t, "\(path).loop") }
        if let t = m["measure"] { s.measure = try r.bool(t, "\(path).measure") }
        // Talk back: the camera's ONVIF backchannel asked for on its RTSP session.
        if let t = m["talk"] { s.sourceOptions.backchannel = try r.bool(t, "\(path).talk") }
        if let t = m["open_timeout"] { s.sourceOptions.openTimeout = try r.duration(t, "\(path).open_timeout", 0.1...600) }
        if let t = m["read_timeout"] { s.sourceOptions.readTimeout = try r.duration(t, "\(path).read_timeout", 0.1...600) }
        s.substream = try Configuration.Substream.parse(m["substream"], main: s, path: "\(path).substream", r, sources: sources)
        if let p = m["preview"] {
            if case .scalar(let sc) = p, ["false", "off", "no"].contains(sc.string) {
                s.preview = nil
            } else {
                s.preview = try PreviewSettings(config: p, path: "\(path).preview", r)
                // Arrival-ordered previews: RTP packets are put back in order only within a short
                // bounded wait (a lost packet costs at most 50 ms, not FFmpeg's 100 ms). With no
                // reordering at all (reorder_queue_size=0), every reordered packet corrupts its
                // picture: under 5 % reordering no picture stayed readable; 20 ms still let
                // 10 % through damaged; 50 ms none (`bench latency --impair`, BENCHMARKS.md).
                if s.preview?.policy.ordering == .arrival { s.sourceOptions.reorderWait = 0.05 }
            }
        }
        if let problem = Configuration.publishExposure(s) { throw ConfigError(file: file, path: "\(path).source", problem: problem) }
        self = s
    }
}
