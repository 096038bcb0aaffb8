import Testing
import MediaCore
import Mux
import TestSupport
import Foundation

/// The RTP packetizer on its own: the stamped source's H.264 cut into RTP by FFmpeg's
/// packetizer, checked packet by packet as a receiver would (RFC 3550 header, RFC 6184
/// fragmentation), and described by an SDP an RTSP client can use.
@Suite(.ownThreads, .tags(.fast)) struct RTPPacketizerTests {
    @Test func theSessionDescriptionNamesTheTrackAndItsParameterSets() throws {
        let (_, streams) = try TestMedia.packets(1)
        let p = try RTPPacketizer(streams: streams, title: "cam")
        #expect(p.tracks.count == 1 && p.tracks[0].control == "streamid=0" && p.tracks[0].codecName == "h264")
        for line in ["v=0", "s=cam", "c=IN IP4 0.0.0.0", "m=video 0 RTP/AVP 96", "a=rtpmap:96 H264/90000", "a=control:streamid=0"] {
            #expect(p.sdp.contains(line + "\r\n"), "\(line) missing from\n\(p.sdp)")
        }
        #expect(p.sdp.contains("packetization-mode=1") && p.sdp.contains("sprop-parameter-sets="), "\(p.sdp)")
    }

    @Test func everyFrameBecomesInOrderRTPWithOneMarkerPerFrame() throws {
        let frames = 90
        let (packets, streams) = try TestMedia.packets(frames, size: "640x360")
        let p = try RTPPacketizer(streams: streams, title: "cam", maxPacketSize: 1200)
        var rtp: [[UInt8]] = [], rtcp = 0, firstIsReport = false
        for (i, packet) in packets.enumerated() {
            let us = Int64(i) * 1_000_000 / 30
            let out = try p.packetize(packet, pts: us, dts: us)
            if i == 0 { firstIsReport = out.first?.isRTCP == true }
            for d in out {
                #expect(d.track == 0 && d.bytes.count <= 1200)
                if d.isRTCP { rtcp += 1 } else { rtp.append(d.bytes) }
            }
        }
        // A sender report opens the session (receivers map RTP time to wall time from it).
        #expect(firstIsReport && rtcp >= 1)
        // A 640x360 keyframe does not fit one packet: fragmented (FU-A), so more packets than frames.
        #expect(rtp.count > frames)
        var markers = 0
        var timestamps: [UInt32] = []
        for (i, b) in rtp.enumerated() {
            #expect(b[0] >> 6 == 2, "RTP version 2")
            #expect(b[1] & 0x7F == 96, "payload type 96")
            let seq = UInt16(b[2]) << 8 | UInt16(b[3])
            if i > 0 {
                let prev = UInt16(rtp[i - 1][2]) << 8 | UInt16(rtp[i - 1][3])
                #expect(seq == prev &+ 1, "sequence \(prev) → \(seq)")
            }
            let ts = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
            if b[1] & 0x80 != 0 { markers += 1; timestamps.append(ts) }
        }
        // The marker ends each access unit; frames are 1/30 s apart on the 90 kHz clock.
        #expect(markers == frames)
        for (a, b) in zip(timestamps, timestamps.dropFirst()) { #expect((2999...3001).contains(b &- a)) }
    }
}

/// Every track in one MPEG-TS over RTP (RFC 2250), for clients that never DESCRIBE: whole TS
/// packets in each RTP packet, in sequence, and the transport stream they carry decodes.
@Suite(.ownThreads) struct MPEGTSPacketizerTests {
    @Test func eachPacketLeavesAtOnceAsWholeTSPacketsThatDecode() throws {
        let frames = 60
        let (packets, streams) = try TestMedia.packets(frames, size: "640x360")
        let p = try MPEGTSPacketizer(streams: streams, title: "cam")
        #expect(p.tracks.count == 1 && p.sdp.contains("m=video 0 RTP/AVP 33\r\n") && p.sdp.contains("a=rtpmap:33 MP2T/90000\r\n"), "\(p.sdp)")
        var ts: [UInt8] = [], last: UInt16?
        for (i, packet) in packets.enumerated() {
            let us = Int64(i) * 1_000_000 / 30
            let out = try p.packetize(packet, pts: us, dts: us)
            // Nothing held for the next picture: every packet gives RTP at once.
            #expect(!out.isEmpty, "packet \(i) held back")
            for d in out {
                let b = d.bytes
                #expect(b.count <= 1400 && b[0] == 0x80 && b[1] == 33)
                #expect((b.count - 12) % 188 == 0 && b[12] == 0x47, "whole TS packets")
                let seq = UInt16(b[2]) << 8 | UInt16(b[3])
                if let last { #expect(seq == last &+ 1) }
                last = seq
                ts += b[12...]
            }
        }
        let file = Paths.tempDirectory("mpegts-rtp").appendingPathComponent("out.ts")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(ts).write(to: file)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames,codec_name",
                                                         "-of", "csv=p=0", file.path], timeout: 20)
        #expect(r.stdout.split(separator: "\n").first == "h264,\(frames)", "\(r.output)")
    }
}
