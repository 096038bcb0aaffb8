import Testing
import Foundation
import TestSupport
import Bench
import StampedSource
import Relay
import RelayAPI

/// The archive as an ops centre uses it: the stamped source recorded in 1-minute segments
/// across a restart and a kill -9, then found by time, played by hls.js in Chromium across a
/// segment boundary, exported as one MP4 (ffprobe, curl -r, stamps read back), and proved.
@Suite(.ownThreads, .serialized) struct RecordingPlaybackTests {
    static let size = (w: 320, h: 180)

    /// Every stamp in a video file, in presentation order (ffmpeg decodes to grey pictures).
    func stamps(of file: String, dir: URL) throws -> [Stamp] {
        let raw = dir.appendingPathComponent("frames-\(UUID().uuidString).gray").path
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let r = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", file, "-f", "rawvideo", "-pix_fmt", "gray", raw], timeout: 120)
        try #require(r.status == 0, "\(r.stderr.suffix(400))")
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        let frame = Self.size.w * Self.size.h
        var out: [Stamp] = []
        data.withUnsafeBytes { b in
            var at = 0
            while at + frame <= b.count {
                let p = b.baseAddress!.advanced(by: at).assumingMemoryBound(to: UInt8.self)
                if let s = StampCodec.read(luma: p, stride: Self.size.w, width: Self.size.w, height: Self.size.h) { out.append(s) }
                at += frame
            }
        }
        return out
    }

    /// The (frame, capture ms) rows browser.py wrote.
    static func stampRows(_ csv: String) -> [(Int, Int64)] {
        ((try? String(contentsOfFile: csv, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: ",")
            guard f.count >= 2, let n = Int(f[0]), let t = Int64(f[1]) else { return nil }
            return (n, t)
        }
    }

    func curl(_ args: [String]) throws -> CommandResult {
        try ChildProcess.run("/usr/bin/curl", ["-s", "-g"] + args, timeout: 120)
    }

    @Test(.tags(.exclusive)) func recordedAcrossARestartAndAKillThenFoundPlayedExportedAndProved() throws {
        let dir = Paths.tempDirectory("playback")
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        let yaml = "streams:\n  cam: {source: \"testsrc://?size=\(Self.size.w)x\(Self.size.h)&fps=30&gop=30\", preview: false, record: {path: \(rec), segment_duration: 30s}}\n"
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]

        // Run A: 40 s (a 30 s file and a 10 s one); run B: 12 s; both stop gracefully.
        let began = Date()
        do {
            let (a, _, _) = try Servers.serve(yaml, dir: dir)
            Thread.sleep(forTimeInterval: 40)
            a.stop()
            Thread.sleep(forTimeInterval: 3)
            let (b, _, _) = try Servers.serve(yaml, dir: dir)
            Thread.sleep(forTimeInterval: 12)
            b.stop()
            Thread.sleep(forTimeInterval: 3)
        }
        // Run C is killed (SIGKILL) mid-file: its file is catalogued when the next run starts.
        let (c, _, _) = try Servers.serve(yaml, dir: dir)
        Thread.sleep(forTimeInterval: 10)
        let killed = Date()
        c.kill()
        let (serve, port, _) = try Servers.serve(yaml, dir: dir)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"

        // Found: three spans (A, B, C) with the restarts between them as gaps.
        let listing = try curl(["\(base)/api/recordings/cam?start=\(iso.string(from: began.addingTimeInterval(-5)))&end=\(iso.string(from: Date()))"])
        let found = try #require(try? Servers.decode(RecordingListing.self, listing.stdout), "\(listing.stdout)")
        let spans = found.spans
        #expect(spans.count == 3, "\(found)")
        #expect(found.gaps.allSatisfy { $0.duration >= 2 }, "\(found)")
        #expect(serve.stderr.range(of: "left by an unclean stop is catalogued") != nil || serve.stdout.range(of: "left by an unclean stop is catalogued") != nil,
                "\(serve.stderr.suffix(800))")

        // The boundary between A's two files, from the catalog's own segments.
        // A1, A2, B1, C1, and the file the running server writes.
        let files = try FileManager.default.contentsOfDirectory(atPath: rec).filter { $0.hasSuffix(".mp4") }.sorted()
        try #require(files.count >= 4, "\(files)")
        let aFirst = (rec as NSString).appendingPathComponent(files[0])
        let firstStamps = try stamps(of: aFirst, dir: dir)
        let boundaryMs = try #require(firstStamps.last).captureMillis
        let aStartMs = try #require(firstStamps.first).captureMillis

        // Played: hls.js in Chromium across the boundary, the stamps back in order.
        let from = Date(timeIntervalSince1970: Double(boundaryMs) / 1000 - 5), to = from.addingTimeInterval(10)
        let playlist = "\(base)/streams/cam/recording.m3u8?start=\(iso.string(from: from))&end=\(iso.string(from: to))"
        let m3u8 = try curl([playlist])
        #expect(m3u8.stdout.range(of: "#EXT-X-PLAYLIST-TYPE:VOD") != nil && m3u8.stdout.range(of: "#EXT-X-ENDLIST") != nil, "\(m3u8.stdout)")
        #expect(m3u8.stdout.components(separatedBy: "#EXT-X-MAP:").count == 3, "two files, two maps: \(m3u8.stdout)")
        let (page, pagePort, pageDir) = try HLSTests.hlsJSPage()
        defer { page.stop(); try? FileManager.default.removeItem(at: pageDir) }
        let csv = dir.appendingPathComponent("hlsjs.csv").path
        let src = playlist.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let b = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                          "http://127.0.0.1:\(pagePort)/hlsjs.html?src=\(src)", "--stamps", "video",
                                                          "--csv", csv, "--seconds", "9", "--size", "\(Self.size.w)x\(Self.size.h)"], timeout: 90)
        let rows = Self.stampRows(csv)
        #expect(rows.count >= 120, "hls.js showed \(rows.count) stamped pictures: \(b.stdout.suffix(600))")
        #expect(zip(rows, rows.dropFirst()).allSatisfy { $0.0 < $1.0 }, "stamps out of order")
        #expect((rows.first?.1 ?? .max) < boundaryMs && (rows.last?.1 ?? 0) > boundaryMs, "not across the boundary at \(boundaryMs): \(rows.first!) … \(rows.last!)")

        // The single view's timeline: the three spans drawn, and a link to a moment plays from
        // there in the same page (hls.js over the recording), the stamps in order.
        let at = Date(timeIntervalSince1970: Double(boundaryMs) / 1000 - 4)
        let dvr = dir.appendingPathComponent("dvr.csv").path
        let view = try ChildProcess.run("/usr/bin/python3", [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path,
                                                             "\(base)/?only=cam&at=\(iso.string(from: at))", "--wait-text", "[data-spans]=3 recorded spans",
                                                             "--stamps", "playback", "--csv", dvr, "--seconds", "7", "--size", "640x480"], timeout: 90)
        #expect(view.stdout.range(of: "\"found\": true") != nil, "\(view.stdout.suffix(800))")
        let dvrRows = Self.stampRows(dvr)
        let atMs = Int64(at.timeIntervalSince1970 * 1000)
        #expect(dvrRows.count >= 90 && zip(dvrRows, dvrRows.dropFirst()).allSatisfy { $0.0 < $1.0 }, "\(dvrRows.count) stamps: \(view.stdout.suffix(600))")
        #expect((dvrRows.first?.1 ?? 0) >= atMs - 1500 && (dvrRows.first?.1 ?? 0) <= atMs + 2500 && (dvrRows.last?.1 ?? 0) > boundaryMs,
                "played from \(dvrRows.first.map { "\($0)" } ?? "-") for a link to \(atMs)")

        // Exported: 30 s across the same boundary, one MP4.
        let start = Date(timeIntervalSince1970: Double(aStartMs) / 1000 + 3.5)
        let query = "start=\(iso.string(from: start))&duration=30"
        let clip = dir.appendingPathComponent("clip.mp4").path, manifest = dir.appendingPathComponent("clip.json").path
        let got = try curl(["-o", clip, "-w", "%{http_code}", "\(base)/streams/cam/recording.mp4?\(query)"])
        #expect(got.stdout == "200")
        _ = try curl(["-o", manifest, "\(base)/streams/cam/recording.json?\(query)"])
        let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", clip], timeout: 60)
        let duration = Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(duration - 30) <= 1.0, "ffprobe says \(duration) s for a 30 s export")
        let clipStamps = try stamps(of: clip, dir: dir)
        #expect(clipStamps.count >= 880, "\(clipStamps.count) stamped pictures in a 30 s clip at 30 fps")
        #expect(zip(clipStamps, clipStamps.dropFirst()).allSatisfy { $1.frameNumber == $0.frameNumber + 1 }, "the clip's stamps are not continuous")
        let startMs = Int64(start.timeIntervalSince1970 * 1000)
        #expect((clipStamps.first?.captureMillis ?? 0) <= startMs && startMs - (clipStamps.first?.captureMillis ?? 0) <= 1100,
                "cut at the keyframe at or before the start: first stamp \(clipStamps.first.map { "\($0)" } ?? "none"), start \(startMs)")
        // Range requests give the file's own bytes.
        let whole = try Data(contentsOf: URL(fileURLWithPath: clip))
        for (range, slice) in [("1000-50999", 1000..<51000), ("-700", (whole.count - 700)..<whole.count), ("\(whole.count - 10)-", (whole.count - 10)..<whole.count)] {
            let part = dir.appendingPathComponent("part").path
            let r = try curl(["-o", part, "-w", "%{http_code}", "-r", range, "\(base)/streams/cam/recording.mp4?\(query)"])
            #expect(r.stdout == "206", "\(range): \(r.stdout)")
            #expect((try? Data(contentsOf: URL(fileURLWithPath: part))) == whole.subdata(in: slice), "range \(range)")
        }
        let beyond = try curl(["-o", "/dev/null", "-w", "%{http_code}", "-r", "\(whole.count + 5)-", "\(base)/streams/cam/recording.mp4?\(query)"])
        #expect(beyond.stdout == "416")

        // Proved: the clip against its manifest, and a tampered copy named.
        let ok = try ChildProcess.run(Paths.liverelay, ["recordings", "verify-export", clip, manifest], timeout: 60)
        #expect(ok.status == 0, "\(ok.output)")
        var bytes = [UInt8](whole)
        bytes[bytes.count / 2] ^= 0x40
        let tampered = dir.appendingPathComponent("tampered.mp4").path
        try Data(bytes).write(to: URL(fileURLWithPath: tampered))
        let bad = try ChildProcess.run(Paths.liverelay, ["recordings", "verify-export", tampered, manifest], timeout: 60)
        #expect(bad.status == 1 && bad.stdout.range(of: "altered") != nil, "\(bad.output)")

        // Audited: who played back, exported and took the manifest, from where.
        let audit = try curl(["\(base)/api/audit?stream=cam"])
        let lines = (try? Servers.decode([AuditEntry].self, audit.stdout)) ?? []
        let actions = Set(lines.map(\.action))
        #expect(actions.isSuperset(of: [.playback, .export, .manifest]), "\(audit.stdout.prefix(1500))")
        #expect(lines.allSatisfy { $0.who == "anonymous" && $0.address == "127.0.0.1" }, "\(audit.stdout.prefix(1500))")
        // Ranges past the first byte are not logged again: one export line for the download.
        #expect(lines.filter { $0.action == .export }.count == 2, "the download and the out-of-range request: \(audit.stdout.prefix(1500))")

        // Killed: C's file plays, and at most about a second before the kill is lost.
        let cFile = (rec as NSString).appendingPathComponent(files[3])
        let plays = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", cFile, "-f", "null", "-"], timeout: 60)
        #expect(plays.status == 0, "\(plays.stderr.suffix(400))")
        let cLast = try #require(try stamps(of: cFile, dir: dir).last)
        let lostMs = Int64(killed.timeIntervalSince1970 * 1000) - cLast.captureMillis
        print("kill -9: \(lostMs) ms before the kill not in the file")
        #expect(lostMs <= 1200, "\(lostMs) ms lost")
        // A1, A2, B1, C1 (recovered) and D's, written at its graceful stop: one chain.
        serve.stop()
        let verify = try ChildProcess.run(Paths.liverelay, ["recordings", "verify", "--state-dir", dir.path], timeout: 60)
        #expect(verify.status == 0 && verify.stdout.range(of: "5 segments verified") != nil, "\(verify.output)")
    }
}
