import Testing
import Foundation
import TestSupport
import Bench
import Relay
import RelayAPI
import Wire
import StampedSource

/// Incidents as an ops centre uses them: three stamped cameras recorded, bookmarks and an
/// incident of two of them made through the API with permissions, its evidence bundle exported,
/// opened by GNU tar and ffprobe, proved offline by `verify-export --key`, and refused for a
/// flipped byte, a removed file, an edited manifest and another node's key; retention keeps the
/// incident's range while it is open and takes it once it is closed.
@Suite(.ownThreads, .serialized) struct IncidentTests {
    static var iso: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }

    func curl(_ args: [String]) throws -> CommandResult {
        try ChildProcess.run("/usr/bin/curl", ["-s", "-g", "-m", "30"] + args, timeout: 60)
    }

    /// The HTTP status and body of a request.
    func call(_ method: String, _ url: String, _ user: [String], json: String? = nil) throws -> (code: String, body: String) {
        var args = ["-X", method, "-w", "\n%{http_code}"] + user
        if let json { args += ["-H", "Content-Type: application/json", "--data-binary", json] }
        let out = try curl(args + [url]).stdout
        let code = out.split(separator: "\n").last.map(String.init) ?? ""
        return (code, String(out.dropLast(code.count)).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func verify(_ bundle: String, key: String) throws -> CommandResult {
        try ChildProcess.run(Paths.liverelay, ["recordings", "verify-export", bundle, "--key", key], timeout: 60)
    }

    @Test(.tags(.exclusive)) func markedHeldExportedProvedAndReleased() throws {
        let dir = Paths.tempDirectory("incident")
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        let pw = ["lead": "lead-secret-1", "viewer": "viewer-secret-2", "unit1": "unit1-secret-3", "chief": "chief-secret-4"]
        let h = try pw.mapValues { try AccessTests.hash($0) }
        let camera = "source: \"testsrc://?size=320x180&fps=30&gop=30\", preview: false, record: {path: \(rec), segment_duration: 1s, keep: 8s}"
        let (serve, port, _) = try Servers.serve("""
        auth:
          users:
            - {name: lead, password: "\(h["lead"]!)", permissions: [read, playback, export, incident]}
            - {name: viewer, password: "\(h["viewer"]!)", permissions: [read, playback]}
            - {name: unit1, password: "\(h["unit1"]!)", permissions: [read, playback, {action: incident, streams: cam1}]}
            - {name: chief, password: "\(h["chief"]!)", permissions: [admin]}
          anonymous: []
        streams:
          cam1: {\(camera)}
          cam2: {\(camera)}
          cam3: {\(camera)}
        """, dir: dir)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        let lead = ["-u", "lead:\(pw["lead"]!)"], viewer = ["-u", "viewer:\(pw["viewer"]!)"], unit1 = ["-u", "unit1:\(pw["unit1"]!)"]
        let chief = ["-u", "chief:\(pw["chief"]!)"]
        let began = Date()
        Thread.sleep(forTimeInterval: 6)
        let start = began.addingTimeInterval(1.5), end = began.addingTimeInterval(4.5)

        // Bookmarks: by the unit on its own camera, refused on another and to a viewer.
        let mark = try call("POST", "\(base)/api/bookmarks", unit1, json: "{\"stream\": \"cam1\", \"time\": \"\(Self.iso.string(from: began.addingTimeInterval(2.5)))\", \"note\": \"a car stops\"}")
        #expect(mark.code == "201", "\(mark)")
        #expect(try Servers.decode(Bookmark.self, mark.body).who == "unit1")
        #expect(try call("POST", "\(base)/api/bookmarks", unit1, json: "{\"stream\": \"cam2\"}").code == "403")
        #expect(try call("POST", "\(base)/api/bookmarks", viewer, json: "{\"stream\": \"cam1\"}").code == "403")
        #expect(try call("POST", "\(base)/api/bookmarks", lead, json: "{\"stream\": \"nosuch\"}").code == "400")
        #expect(try call("POST", "\(base)/api/bookmarks", lead, json: "{\"stream\": \"cam2\", \"note\": \"now\"}").code == "201")

        // The incident: two cameras, a range of 3 s.
        let body = "{\"title\": \"Gate 3\", \"notes\": \"two units\", \"streams\": [\"cam1\", \"cam2\"], \"start\": \"\(Self.iso.string(from: start))\", \"end\": \"\(Self.iso.string(from: end))\"}"
        #expect(try call("POST", "\(base)/api/incidents", viewer, json: body).code == "403")
        #expect(try call("POST", "\(base)/api/incidents", unit1, json: body).code == "403", "incident only on cam1")
        #expect(try call("POST", "\(base)/api/incidents", lead, json: "{\"title\": \"x\", \"streams\": [], \"start\": \"\(Self.iso.string(from: start))\", \"end\": \"\(Self.iso.string(from: end))\"}").code == "400")
        let made = try call("POST", "\(base)/api/incidents", lead, json: body)
        #expect(made.code == "201", "\(made)")
        let incident = try Servers.decode(Incident.self, made.body)
        #expect(incident.state == .open && incident.createdBy == "lead" && incident.streams == ["cam1", "cam2"])
        // Held on both cameras while open.
        for cam in ["cam1", "cam2"] {
            let holds = try Servers.api([RecordingHold].self, "\(base)/api/recordings/\(cam)/holds", chief, maxTime: 5)
            #expect(holds.map(\.reason) == ["incident \(incident.id)"], "\(cam)")
        }
        // Viewed by the viewer (playback), with its bookmarks; found by text and by stream.
        let view = try Servers.api(IncidentView.self, "\(base)/api/incidents/\(incident.id)", viewer)
        #expect(view.incident == incident)
        #expect(view.bookmarks.map(\.note) == ["a car stops"])
        #expect(try Servers.api([Incident].self, "\(base)/api/incidents?q=gate", viewer).map(\.id) == [incident.id])
        #expect(try Servers.api([Incident].self, "\(base)/api/incidents?stream=cam3", viewer).isEmpty)

        // The bundle: the viewer may not take it; the lead does.
        #expect(try call("GET", "\(base)/api/incidents/\(incident.id)/export", viewer).code == "403")
        let bundle = dir.appendingPathComponent("bundle.tar").path
        let got = try curl(lead + ["-o", bundle, "-w", "%{http_code}", "\(base)/api/incidents/\(incident.id)/export"])
        #expect(got.stdout == "200", "\(got.stdout)")
        let keys = try Servers.api(NodeKeys.self, "\(base)/api/keys", viewer)
        let key = try #require(keys.keys.first?.publicKey)
        // The node's key on disk is the one served, and `liverelay keys` prints it.
        let printed = try ChildProcess.run(Paths.liverelay, ["keys", "--state-dir", dir.path], timeout: 10).stdout
        #expect(printed.contains(key), "\(printed)")

        // Proved offline.
        let ok = try verify(bundle, key: key)
        #expect(ok.status == 0 && ok.stdout.contains("incident \(incident.id) (Gate 3), 2 files"), "\(ok.output)")
        // GNU tar opens it; each MP4 plays and holds the incident's moment.
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        #expect(try ChildProcess.run("/usr/bin/tar", ["-xf", bundle, "-C", out.path], timeout: 30).status == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("incident-\(incident.id)").path).sorted()
        #expect(files == ["cam1.mp4", "cam2.mp4", "manifest.json", "manifest.json.sig"])
        for cam in ["cam1", "cam2"] {
            let mp4 = out.appendingPathComponent("incident-\(incident.id)/\(cam).mp4").path
            let stamps = try RecordingPlaybackTests().stamps(of: mp4, dir: dir)
            let first = try #require(stamps.first, "\(cam): no stamp")
            let last = try #require(stamps.last)
            // From the keyframe at or before the start (a GOP is 1 s) to the end.
            let startMs = Int64(start.timeIntervalSince1970 * 1000), endMs = Int64(end.timeIntervalSince1970 * 1000)
            #expect(first.captureMillis <= startMs + 40 && first.captureMillis > startMs - 1100, "\(cam): first picture at \(first.captureMillis - startMs) ms from the start")
            #expect(last.captureMillis >= endMs - 1100 && last.captureMillis <= endMs + 1100, "\(cam): last picture at \(last.captureMillis - endMs) ms from the end")
        }
        let manifest = try EvidenceBundle.decoder.decode(EvidenceManifest.self,
                                                         from: Data(contentsOf: out.appendingPathComponent("incident-\(incident.id)/manifest.json")))
        #expect(manifest.key.publicKey == key && manifest.bookmarks.map(\.note) == ["a car stops"])
        #expect(manifest.files.allSatisfy { $0.clip.segments.allSatisfy { $0.previousChain != nil } })
        #expect(manifest.audit.contains { $0.action == .incident && $0.detail.contains("made") }, "\(manifest.audit)")

        // Refused: a flipped byte in each MP4, a removed file, an edited manifest, another key.
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: bundle)))
        let members = try Tar.members(length: original.count) { o, n in o + n <= original.count ? Array(original[o..<(o + n)]) : nil }.get()
        func member(_ suffix: String) throws -> Tar.Member { try #require(members.first { $0.name.hasSuffix(suffix) }) }
        func rejected(_ bytes: [UInt8], _ name: String) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let r = try verify(path, key: key)
            #expect(r.status == 1, "\(name): \(r.output)")
            return r.stdout
        }
        for cam in ["cam1", "cam2"] {
            var flipped = original
            let m = try member("/\(cam).mp4")
            flipped[m.offset + m.size / 2] ^= 0x01
            let said = try rejected(flipped, "flipped-\(cam).tar")
            #expect(said.contains("\(cam).mp4: altered"), "\(said)")
        }
        var without: [UInt8] = []
        for m in members where !m.name.hasSuffix("/cam2.mp4") {
            without += Tar.header(name: m.name, size: m.size, mtime: 0)! + original[m.offset..<(m.offset + m.size)] + Tar.padding(after: m.size)
        }
        #expect(try rejected(without + Tar.end, "removed.tar").contains("missing: cam2.mp4"))
        // A second cam1.mp4 appended (GNU tar extracts the last one): refused, not verified against the first.
        let cam1 = try member("/cam1.mp4")
        var appended = Array(original.prefix(original.count - 2 * Tar.block))
        appended += Tar.header(name: cam1.name, size: 3, mtime: 0)! + Array("xyz".utf8) + Tar.padding(after: 3) + Tar.end
        #expect(try rejected(appended, "appended.tar").contains("a name twice: \(cam1.name)"))
        var edited = original
        let mm = try member("/manifest.json")
        let text = Array(edited[mm.offset..<(mm.offset + mm.size)])
        let at = try #require(text.indices.first { text[$0...].starts(with: Array("Gate 3".utf8)) })
        edited[mm.offset + at + 3] = UInt8(ascii: "s") // "Gats 3"
        #expect(try rejected(edited, "edited.tar").contains("does not match its signature"))
        let other = try verify(bundle, key: NodeKey.ephemeral().publicKey)
        #expect(other.status == 1 && other.stdout.contains("signed by another key"), "\(other.output)")

        // Retention: 8 s after the range ended, the third camera's same range is gone while the
        // incident's two are kept.
        func recorded(_ cam: String) throws -> Int {
            try Servers.api(RecordingListing.self, "\(base)/api/recordings/\(cam)?start=\(Self.iso.string(from: start))&end=\(Self.iso.string(from: end))", lead).spans.count
        }
        let kept = Date().addingTimeInterval(30)
        while Date() < kept, try recorded("cam3") > 0 { Thread.sleep(forTimeInterval: 0.5) }
        #expect(try recorded("cam3") == 0, "retention did not take cam3's range")
        #expect(try recorded("cam1") > 0 && recorded("cam2") > 0, "an open incident's range was taken")
        // Closed: its holds go, and retention takes the range.
        let closed = try call("PATCH", "\(base)/api/incidents/\(incident.id)", lead, json: "{\"state\": \"closed\"}")
        #expect(closed.code == "200" && (try? Servers.decode(Incident.self, closed.body).state) == .closed, "\(closed)")
        #expect(try Servers.api([RecordingHold].self, "\(base)/api/recordings/cam1/holds", chief, maxTime: 5).isEmpty)
        let gone = Date().addingTimeInterval(20)
        while Date() < gone, try recorded("cam1") > 0 || recorded("cam2") > 0 { Thread.sleep(forTimeInterval: 0.5) }
        #expect(try recorded("cam1") == 0 && recorded("cam2") == 0, "a closed incident's range was kept")

        // Every step is in the audit log, by whom (the admin's to read).
        #expect(try call("GET", "\(base)/api/audit", lead).code == "403")
        let audit = try Servers.api([AuditEntry].self, "\(base)/api/audit?stream=cam1", chief, maxTime: 5)
        let steps = Set(audit.map { "\($0.who) \($0.action.rawValue) \($0.detail.split(separator: ":").first ?? "")" })
        for step in ["unit1 bookmark bookmark 1", "lead incident incident \(incident.id) made", "viewer incident incident \(incident.id) viewed",
                     "lead export incident \(incident.id) evidence bundle", "lead incident incident \(incident.id) changed"] {
            #expect(steps.contains(step), "\(step) not in \(steps.sorted())")
        }
        #expect(manifest.audit.contains { $0.action == .bookmark && $0.who == "unit1" })
    }

    /// `b` on the wall marks the selected tile's moment: Chromium presses 1 (select the first
    /// tile) and b; the bookmark is in the API with the moment of the picture the tile showed.
    @Test func theWallMarksTheSelectedTileWithB() throws {
        let (serve, port, dir) = try Servers.serve("""
        streams:
          door: {source: "testsrc://?size=320x180&fps=15&gop=15", preview: false}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let before = Date()
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "http://127.0.0.1:\(port)/",
                                                      "--keys", "1b", "--keys-after", "4", "--wall", "--seconds", "2", "--timeout", "30"], timeout: 90)
        let marks = try Servers.api([Bookmark].self, "http://127.0.0.1:\(port)/api/bookmarks?stream=door")
        let mark = try #require(marks.first, "no bookmark: \(r.stdout.suffix(600)) \(r.stderr.suffix(600))")
        #expect(marks.count == 1 && mark.stream == "door" && mark.who == "anonymous")
        // The moment of a picture the tile had painted: after the page opened, before b was pressed.
        #expect(mark.time > before && mark.time <= mark.made, "marked \(mark.time), made \(mark.made), page opened \(before)")
        #expect(mark.made.timeIntervalSince(mark.time) < 2, "the picture marked is \(mark.made.timeIntervalSince(mark.time)) s old")
    }

    /// An incident of four stamped cameras reviewed in step on `/incidents/{id}` in Chromium,
    /// read from the page's pixels: paused after a seek, every tile shows the newest picture at
    /// or before the clock (so the four agree within a frame); a frame forward moves each by one
    /// picture and a frame back returns; the fourth camera, whose early recording retention
    /// took before the incident held it, shows "no recording" there and no picture; playing at
    /// 1× and 4× the tiles move with the clock, together; the bookmark is on the timeline; the
    /// incident's bundle then exports and verifies.
    @Test func fourCamerasReviewedInStep() throws {
        let dir = Paths.tempDirectory("review")
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        func cam(keep: String) -> String {
            "{source: \"testsrc://?size=320x180&fps=30&gop=30\", preview: false, record: {path: \(rec), segment_duration: 1s, keep: \(keep)}}"
        }
        let (serve, port, _) = try Servers.serve("""
        streams:
          cam1: \(cam(keep: "2m"))
          cam2: \(cam(keep: "2m"))
          cam3: \(cam(keep: "2m"))
          cam4: \(cam(keep: "3s"))
        """, dir: dir)
        defer { serve.stop() }
        let base = "http://127.0.0.1:\(port)"
        let began = Date()
        Thread.sleep(forTimeInterval: 14)
        let start = began.addingTimeInterval(1), end = Date().addingTimeInterval(-0.5)
        #expect(try call("POST", "\(base)/api/bookmarks", [], json: "{\"stream\": \"cam2\", \"time\": \"\(Self.iso.string(from: start.addingTimeInterval(4)))\", \"note\": \"look\"}").code == "201")
        let made = try call("POST", "\(base)/api/incidents", [], json: """
            {"title": "Four", "streams": ["cam1", "cam2", "cam3", "cam4"], "start": "\(Self.iso.string(from: start))", "end": "\(Self.iso.string(from: end))"}
            """)
        let incident = try Servers.decode(Incident.self, made.body)
        // Where cam4's recording begins now (whole seconds): the moment before it is a gap.
        let cam4 = try Servers.api(RecordingListing.self, "\(base)/api/recordings/cam4?start=\(Self.iso.string(from: start))&end=\(Self.iso.string(from: end))")
        let cam4From = try #require(cam4.spans.first?.start)
        let early = start.addingTimeInterval(1.5), late = end.addingTimeInterval(-1.2)
        #expect(cam4From.timeIntervalSince(early) > 1, "cam4 recorded from \(cam4From): no gap at \(early)")
        let ms = { (d: Date) in Int(d.timeIntervalSince1970 * 1000) }
        let norec = "getComputedStyle(document.querySelector('[data-tile=cam4] .norec')).display === 'flex' ? 1 : 0"
        let steps = ["eval:review.loaded",
                     "eval:review.seekAndWait(\(ms(early)))", "eval:review.stamps()", "eval:\(norec)",
                     "eval:review.seekAndWait(\(ms(late)))", "eval:review.stamps()", "eval:\(norec)",
                     "eval:review.step(1)", "sleep:0.4", "eval:review.stamps()",
                     "eval:review.step(-1)", "sleep:0.4", "eval:review.stamps()",
                     "eval:document.querySelectorAll('#timeline .mark').length",
                     "eval:review.seekAndWait(\(ms(early)))", "eval:review.play()", "sleep:0.5", "eval:review.sample(1000)", "eval:review.pause()",
                     "eval:review.setRate(4)", "eval:review.seekAndWait(\(ms(start) + 100))", "eval:review.play()", "sleep:0.5", "eval:review.sample(1000)"]
        let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path, "\(base)/incidents/\(incident.id)",
                                                      "--size", "1280x800", "--keys-after", "3", "--timeout", "60", "--seconds", "0.1",
                                                      "--steps", steps.joined(separator: ";")], timeout: 120)
        let e = BrowserEvals<ReviewEval>.of(r.stdout)
        try #require(e.count == 20, "\(r.stdout.suffix(600)) \(r.stderr.suffix(600))")
        #expect(e[0].number == 4, "the page loaded \(String(describing: e[0].number)) of 4 cameras' recordings")

        /// Every tile named shows a picture at most one frame older than `t`, none newer (5 ms
        /// for the clock's rounding).
        func atOrJustBefore(_ s: ReviewEval.Stamps?, _ t: Date, _ cams: [String], _ what: String) {
            for c in cams {
                let shown = s?.tiles[c] ?? nil
                let off = shown.map { $0 - Double(ms(t)) }
                #expect(off.map { $0 > -34 && $0 <= 5 } ?? false, "\(what): \(c) shows a picture \(off.map { "\(Int($0)) ms" } ?? "none") from the clock")
            }
        }
        // Early: three cameras at the clock, the fourth "no recording" and no picture.
        #expect(e[1].seek.map { Set($0.ms.keys) } == ["cam1", "cam2", "cam3"], "\(String(describing: e[1].seek))")
        atOrJustBefore(e[2].stamps, early, ["cam1", "cam2", "cam3"], "early")
        #expect((e[2].stamps?.tiles["cam4"] ?? nil) == nil && e[3].number == 1, "cam4 has no recording early: \(String(describing: e[2].stamps))")
        // Late: all four agree, and cam4 shows its picture.
        atOrJustBefore(e[5].stamps, late, ["cam1", "cam2", "cam3", "cam4"], "late")
        #expect(e[6].number == 0, "cam4's 'no recording' shown where it has one")
        // A frame forward: each tile one picture on; a frame back: the same pictures as before.
        for c in ["cam1", "cam2", "cam3", "cam4"] {
            let before = e[5].stamps?.tiles[c] ?? nil, next = e[8].stamps?.tiles[c] ?? nil, back = e[10].stamps?.tiles[c] ?? nil
            let moved = next.flatMap { n in before.map { n - $0 } }
            // One picture on: a 33 ms step, give or take the capture's jitter on a loaded machine
            // (43 ms seen side by side), and short of two pictures.
            #expect(moved.map { $0 > 20 && $0 < 55 } ?? false, "\(c): a frame forward moved \(String(describing: moved)) ms")
            #expect(back != nil && back == before, "\(c): a frame back shows \(String(describing: back)), before \(String(describing: before))")
        }
        #expect(e[11].number == 1, "the bookmark is not on the timeline")
        // Playing: the tiles move with the clock and together.
        for (i, rate) in [(14, 1.0), (19, 4.0)] {
            let samples = try #require(e[i].samples, "no samples at \(rate)×")
            let first = try #require(samples.first), last = try #require(samples.last)
            let clock = last.clock - first.clock
            #expect(clock > 800 * rate && clock < 1300 * rate, "\(rate)×: the clock moved \(clock) ms in a second")
            for c in ["cam1", "cam2", "cam3"] {
                let moved = ((last.tiles[c] ?? nil) ?? 0) - ((first.tiles[c] ?? nil) ?? 0)
                #expect(abs(moved - clock) < 150 * rate, "\(rate)×: \(c) moved \(moved) ms while the clock moved \(clock)")
            }
            let spreads = samples.compactMap(\.spread).sorted()
            let median = spreads.isEmpty ? Double.infinity : spreads[spreads.count / 2]
            // At 4× a 60 Hz refresh is 67 ms of capture time, and a loaded machine drops more
            // pictures (143 ms was seen with the suite side by side): a looser bound there.
            let limit = rate > 1 ? 250.0 : 50.0
            #expect(median <= limit, "\(rate)×: the tiles' pictures differ by \(median) ms (median over \(spreads.count))")
        }

        // Exported, and proved offline.
        let bundle = dir.appendingPathComponent("bundle.tar").path
        #expect(try curl(["-o", bundle, "-w", "%{http_code}", "\(base)/api/incidents/\(incident.id)/export"]).stdout == "200")
        let key = try #require(try Servers.api(NodeKeys.self, "\(base)/api/keys").keys.first?.publicKey)
        let ok = try verify(bundle, key: key)
        #expect(ok.status == 0 && ok.stdout.contains("4 files"), "\(ok.output)")
    }
}
