public import Demux
import Yams
import Wire

extension Configuration {
    /// `streams.NAME.substream`: the small stream a camera offers next to its main one (nearly
    /// every IP camera has one: `stream2`, `subtype=1`, an ONVIF profile of fewer pixels). Wall
    /// tiles smaller than the main picture play it; everything else (recordings, HLS, forwards,
    /// the selected tile, the single view, full screen) takes the main stream. Served as the
    /// stream `NAME_sub` (RTSP `NAME/sub`, WHEP `?stream=sub`), read only while something uses it.
    public struct Substream: Sendable, Equatable {
        /// Its own URL, credentials included (any source a stream takes), or the ONVIF camera's
        /// sub profile (`onvif+sub://…`, made from an `onvif://` main source).
        public var source: String
        /// Its own transport, client and deadlines; the main stream's unless given.
        public var options: SourceOptions

        /// The stream a sub stream is served as.
        public static func streamName(_ stream: String) -> String { "\(stream)_\(suffix)" }
        public static let suffix = "sub"

        /// `substream: URL`, `substream: {source, transport, rtsp_client, open_timeout,
        /// read_timeout}`, or `substream: false`. An `onvif://` main source has one unless told
        /// `false`: the camera's smallest other profile, resolved with the main one.
        static func parse(_ node: Node?, main: Configuration.Stream, path: String, _ r: Reader,
                          sources: SourceOpener) throws(ConfigError) -> Substream? {
            let onvif = ONVIFURL(main.source) != nil
            guard let node else {
                // A camera's own ladder that names a rendition `sub` keeps it: no implicit one.
                guard onvif, !main.renditions.contains(where: { $0.name == suffix }) else { return nil }
                return Substream(source: SourceOpener.onvifSubScheme + "://" + main.source.dropFirst("onvif://".count), options: main.sourceOptions)
            }
            if case .scalar(let sc) = node, ["false", "off", "no"].contains(sc.string) { return nil }
            guard !main.renditions.contains(where: { $0.name == suffix }) else {
                throw ConfigError(file: r.file, path: path, problem: "a rendition is named \"\(suffix)\" already: the sub stream is served as \(streamName(main.name))")
            }
            guard !main.source.hasPrefix("publish://") else {
                throw ConfigError(file: r.file, path: path, problem: "a publish stream has no camera to ask for a sub stream")
            }
            var sub = Substream(source: "", options: main.sourceOptions)
            // A sub stream is not a listener of its own.
            sub.options.listen = false
            let sourceNode: Node
            let sourcePath: String
            if case .mapping = node {
                let m = try r.mapping(node, path, allowed: ["source", "transport", "rtsp_client", "open_timeout", "read_timeout"])
                guard let src = m["source"] else { throw ConfigError(file: r.file, path: "\(path).source", problem: "missing") }
                (sourceNode, sourcePath) = (src, "\(path).source")
                if let t = m["transport"] { sub.options.transport = try r.choice(t, "\(path).transport", SourceOptions.Transport.self) }
                if let t = m["rtsp_client"] { sub.options.rtspClient = try r.choice(t, "\(path).rtsp_client", SourceOptions.RTSPClient.self) }
                if let t = m["open_timeout"] { sub.options.openTimeout = try r.duration(t, "\(path).open_timeout", 0.1...600) }
                if let t = m["read_timeout"] { sub.options.readTimeout = try r.duration(t, "\(path).read_timeout", 0.1...600) }
            } else {
                (sourceNode, sourcePath) = (node, path)
            }
            sub.source = try r.string(sourceNode, sourcePath)
            if sub.source == "onvif" {
                // `substream: onvif`: the ONVIF main source's sub profile, said explicitly.
                guard onvif else { throw ConfigError(file: r.file, path: sourcePath, problem: "\"onvif\" takes the sub profile of an onvif:// source, and this stream's is not one") }
                sub.source = SourceOpener.onvifSubScheme + "://" + main.source.dropFirst("onvif://".count)
            } else if sub.source == "publish" || sub.source.hasPrefix("publish://") || SourceOpener.isFile(url: sub.source) {
                throw ConfigError(file: r.file, path: sourcePath, problem: "a sub stream is a camera's live stream (rtsp://, rtmp://, srt://, onvif), not a file or a publisher")
            } else if let problem = sources.validate(url: sub.source) {
                throw ConfigError(file: r.file, path: sourcePath, problem: problem)
            }
            return sub
        }
    }
}

extension Configuration.Stream {
    /// The stream its sub stream is served as (`NAME_sub`): the camera's second source, read
    /// only while a tile or a reader uses it (on demand), with no preview, HLS, recording or
    /// forward of its own. It belongs to the stream (`partOf`): its permissions, its node.
    func substreamStream() -> Configuration.Stream? {
        guard let sub = substream else { return nil }
        var d = Configuration.Stream(name: Configuration.Substream.streamName(name), source: sub.source)
        d.sourceOptions = sub.options
        // The camera's speaker is talked to on the main stream's session only.
        d.sourceOptions.backchannel = false
        d.title = "\(title ?? name) (sub stream)"
        d.group = group
        d.description = description
        d.onDemandIdle = 10
        d.preview = nil
        d.decoderOptions = decoderOptions
        d.partOf = name
        d.isSubstream = true
        d.madeByAPI = madeByAPI
        return d
    }
}
