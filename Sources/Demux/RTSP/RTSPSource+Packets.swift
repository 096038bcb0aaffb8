internal import CFFmpeg
import Wire
import MediaCore
import Foundation
import Logging

/// How `RTSPSource` turns rebuilt frames into packets: the probe that waits for the first
/// keyframe, and each frame's timestamp, repeat and reorder checks, damage and wall clock.
extension RTSPSource {
    // MARK: - Probe

    /// Waits for the first picture that can start decoding (a keyframe, with parameter sets from
    /// the SDP or the stream), then takes the streams' parameters from it and from the SDP.
    func probe(_ described: [SDPTrack], until end: UInt64, deadline: Double) throws {
        let videoIndex = kinds.firstIndex(of: .video)!
        let media = described.filter { ["video", "audio"].contains($0.kind) }
        let videoMedia = media.first { $0.kind == "video" }!
        let videoTrack = tracks[videoIndex]
        let syntax: ParameterSets.Syntax = videoTrack.format == .h264 ? .h264 : .h265
        let sprop = ParameterSets(fmtp: videoMedia.fmtp, syntax: syntax).annexB
        var params: (CodecParameters, Double?)?
        while params == nil || (params!.1 == nil && probeSecondPTS == nil) {
            if let key = probeKeyframe, params == nil {
                var extradata = sprop
                if extradata.isEmpty { extradata = videoTrack.inBand.annexB }
                let v = try RTSPStreamParameters.video(syntax, keyframe: key.data, extradata: extradata, source: url)
                if v.mayReorder { throw Unsupported(reason: "pictures may be reordered (B-frames)", connection: link) }
                params = (v.parameters, v.frameRate)
            }
            // Done once there is a frame rate, from the parameters or from a second picture
            // (the keyframe and the next picture often come in one read over TCP: waiting for
            // another event then waited out the whole probe deadline, 5 s).
            if params != nil && (params!.1 != nil || probeSecondPTS != nil) { break }
            do throws(WireError) {
                probeEvent = false
                try pump(until: end, probing: true)
            } catch .timedOut where params != nil {
                break // no frame rate from a second picture: none
            } catch {
                let e = fail(error, stage: Self.probingStage, deadline: deadline)
                throw e.kind == .timedOut ? IngestError(.timedOut, source: url, stage: Self.probingStage, detail: "no picture to start from within \(formatSeconds(deadline))") : e
            }
            if ended { throw IngestError(.failed, source: url, stage: Self.probingStage, detail: "the server ended the stream") }
        }
        var found: [StreamInfo] = []
        for (i, t) in tracks.enumerated() {
            if i == videoIndex {
                var rate = params!.1
                if rate == nil, let a = probeFirstPTS, let b = probeSecondPTS, b > a { rate = Double(t.clockRate) / Double(b - a) }
                found.append(StreamInfo(index: i, timeBase: timeBases[i], frameRate: rate, parameters: params!.0))
            } else {
                found.append(StreamInfo(index: i, timeBase: timeBases[i], frameRate: nil, parameters: try RTSPStreamParameters.audio(media[i], format: t.format, source: url)))
            }
        }
        streams = found
    }

    func packet(of f: RTPFrame, track i: Int) {
        let t = tracks[i], kind = kinds[i]
        // One timeline per track from its RTP clock; the tracks lined up by when each began.
        let pts = timelines.pts(track: i, timestamp: f.timestamp, arrival: f.arrivalNanos, clockRate: t.clockRate)
        // A picture sent again (gst-rtsp-server sends its first keyframe again to every viewer
        // of a shared stream when another joins) is dropped; a picture shortly before the last
        // one is a B-frame, whose decode order is not known here (FFmpeg's client next time).
        // Anything else going back (a camera that restarted its clock) is handed on, as
        // FFmpeg's demuxer does: the hub's timeline takes it as a discontinuity.
        if let last = timelines.lastPTS(track: i), pts <= last {
            if kind == .video ? recentVideoPTS.contains(pts) : pts == last {
                return
            }
            if kind == .video && last - pts < Int64(t.clockRate) {
                FFmpegPreferred.insert(url)
                logger.warning("pictures arrive out of presentation order (B-frames); the next connection uses FFmpeg's RTSP client", metadata: ["source": "\(redactedURL)"])
                ended = true
                return
            }
        }
        timelines.handedOn(track: i, pts: pts)
        if kind == .video {
            if recentVideoPTS.count < 64 { recentVideoPTS.append(pts) } else { recentVideoPTS[recentNext] = pts; recentNext = (recentNext + 1) % 64 }
            if streams.isEmpty {
                // Probing: pictures before the first keyframe cannot be decoded; keep them out.
                if probeKeyframe == nil {
                    guard f.isKey else { return }
                    probeKeyframe = f
                    probeFirstPTS = pts
                    probeEvent = true
                } else if probeSecondPTS == nil {
                    probeSecondPTS = pts
                    probeEvent = true
                }
            }
        }
        let count = f.data.count
        guard av_new_packet(scratch, Int32(count)) >= 0 else { return }
        f.data.withUnsafeBytes { _ = memcpy(scratch.pointee.data, $0.baseAddress!, count) }
        scratch.pointee.pts = pts
        scratch.pointee.dts = pts
        scratch.pointee.stream_index = Int32(i)
        if f.isKey { scratch.pointee.flags = AV_PKT_FLAG_KEY }
        switch t.format {
        case .aac: scratch.pointee.duration = 1024
        case .g711: scratch.pointee.duration = Int64(count)
        case .h264, .h265, .opus: break
        }
        guard let p = try? Packet(movingFrom: scratch, timeBase: timeBases[i], mediaType: kind, arrivalNanos: f.arrivalNanos) else {
            av_packet_unref(scratch)
            return
        }
        if f.lostBefore > 0 {
            p.lostBefore = f.lostBefore
            damagedUntilKeyframe = true
        } else if f.isKey && kind == .video {
            damagedUntilKeyframe = false
        }
        if kind == .video { p.isDamaged = damagedUntilKeyframe }
        if let sr = t.senderReport {
            p.senderWallMicros = sr.wallMicros &+ Int64(Int32(bitPattern: f.timestamp &- sr.timestamp)) * 1_000_000 / Int64(t.clockRate)
        }
        ready.append(p)
    }
}
