import Hummingbird
import HTTPTypes
import NIOCore
import Relay
import Foundation
import Wire
import MediaCore

/// `GET /streams/NAME/hls/master.m3u8`: the multivariant playlist of a stream and its
/// renditions (each its own stream's LL-HLS or HLS playlist), for adaptive players. Asking for
/// it starts every rendition's encoder, so that the first request for a rendition's playlist
/// waits for its first segment rather than failing.
enum HLSMultivariant {
    static func response(engine: RelayEngine, name: String, query: String?) throws -> Response {
        guard let settings = engine.settings(name), let hub = engine.hubs[name], settings.hls != nil else {
            return try HTTPResponses.jsonError(.notFound, "unknown stream or no HLS \"\(name)\"")
        }
        hub.demand()
        let status = hub.currentStatus
        let video = hub.latestEpoch?.streams.first { $0.mediaType == .video }
        let sourceRate = video?.frameRate ?? status.fpsIn
        var lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-INDEPENDENT-SEGMENTS"]
        let suffix = query.map { "?" + $0 } ?? ""
        func entry(bandwidth: Int, width: Int?, height: Int?, codecs: String?, fps: Double?, uri: String) {
            var attrs = ["BANDWIDTH=\(max(bandwidth, 1))"]
            if let width, let height, width > 0, height > 0 { attrs.append("RESOLUTION=\(width)x\(height)") }
            if let codecs { attrs.append("CODECS=\"\(codecs)\"") }
            if let fps, fps > 0 { attrs.append(String(format: "FRAME-RATE=%.3f", fps)) }
            lines.append("#EXT-X-STREAM-INF:" + attrs.joined(separator: ","))
            lines.append(uri + suffix)
        }
        // The source, at what it measures (or a guess above the top rendition's).
        let top = settings.renditions.map(\.bitrateKbps).max() ?? 1000
        let sourceBits = status.bitrateIn > 0 ? Int(saturating: status.bitrateIn * 1.1) : top * 2000
        // Every rendition carries the source's sound as it is.
        let sound = hub.latestEpoch?.streams.first { $0.mediaType == .audio }.flatMap { RenditionInfo.codecs(audio: $0) }
        func codecs(_ video: String?) -> String? { video.map { v in sound.map { "\(v),\($0)" } ?? v } }
        entry(bandwidth: sourceBits, width: status.width, height: status.height,
              codecs: codecs(video.flatMap { RenditionInfo.codecs(video: $0.codecName, extradata: $0.parameters.extradata) }), fps: sourceRate, uri: "index.m3u8")
        // The H.264 fallback (source size) first among the renditions: hls.js leaves out the
        // variants whose CODECS its MSE cannot play (H.265 in most browsers) and plays it.
        let sourceHeight = status.height ?? 0
        for r in settings.renditions.sorted(by: { $0.height(source: sourceHeight) > $1.height(source: sourceHeight) }) {
            let stream = RenditionSettings.streamName(name, r.name)
            guard let rh = engine.hubs[stream], engine.settings(stream)?.hls != nil else { continue }
            rh.demand()
            let info = engine.renditions[stream]
            // Known once it encoded (the fallback's size and bit rate follow the source's).
            let height = (info?.height).flatMap { $0 > 0 ? $0 : nil } ?? r.height(source: sourceHeight)
            let width = info?.width ?? r.width ?? status.width.flatMap { w in status.height.map { h in max(2, Int(saturating: (Double(w) * Double(height) / Double(max(1, h)) / 2).rounded()) * 2) } }
            let kbps = (info?.bitrateKbps).flatMap { $0 > 0 ? $0 : nil } ?? r.bitrate(width: width ?? 0, height: height, fps: sourceRate > 0 ? sourceRate : 30)
            entry(bandwidth: kbps * 1100, width: width, height: height, codecs: codecs(info?.codecs ?? "avc1.64001f"),
                  fps: r.fps.map { min($0, sourceRate) } ?? sourceRate, uri: "/streams/\(stream)/hls/index.m3u8")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/vnd.apple.mpegurl"
        headers[.cacheControl] = "max-age=1"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: lines.joined(separator: "\n") + "\n")))
    }
}
