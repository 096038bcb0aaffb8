import Testing
import Foundation
import TestSupport
import Fleet
import Relay
import RelayAPI

/// Three `liverelay serve` nodes on one real PostgreSQL, reading real gst-rtsp-server cameras.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct FleetServeTests {
    struct Node {
        let name: String
        let child: ChildProcess
        let http: Int
        let rtsp: Int
        var pid: Int32 { child.process.processIdentifier }
    }

    /// What `url` answers, as a `T`; nil when nothing (or not a `T`) answers.
    static func api<T: Decodable>(_ type: T.Type, _ url: String) -> T? {
        Servers.apiIfAny(type, url, maxTime: 3)
    }

    /// stream → node, from one node's `/api/fleet`.
    static func leases(_ node: Node) -> [String: String] {
        guard let f = api(FleetReport.self, "http://127.0.0.1:\(node.http)/api/fleet") else { return [:] }
        var out: [String: String] = [:]
        for e in f.leases { out[e.stream] = e.node }
        return out
    }

    /// The processes connected to a camera's port now.
    static func readers(port: Int) -> Set<Int32> {
        guard let r = try? ChildProcess.run("/usr/bin/ss", ["-tnpH", "state", "established", "( dport = :\(port) )"], timeout: 5) else { return [] }
        var pids = Set<Int32>()
        for line in r.stdout.split(separator: "\n") {
            var rest = Substring(line)
            while let at = rest.range(of: "pid=") {
                rest = rest[at.upperBound...]
                if let n = Int32(rest.prefix { $0.isNumber }) { pids.insert(n) }
            }
        }
        return pids
    }

    @Test(.tags(.exclusive)) func everyCameraReadOnceAnyNodeAnswersAndADeadNodesCamerasMoveWithinFiveSeconds() throws {
        let pg = try PostgresServer()
        defer { pg.stop() }
        let dir = Paths.tempDirectory("fleet")
        defer { try? FileManager.default.removeItem(at: dir) }
        let launch = "( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=180,framerate=15/1 "
            + "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 bitrate=300 ! rtph264pay name=pay0 pt=96 config-interval=1 )"
        let cameras = try (0..<5).map { _ in try Servers.RTSP(mounts: ["/cam=" + launch]) }
        var streams = ""
        for (i, c) in cameras.enumerated() {
            streams += "  cam\(i): {source: \"\(c.url("/cam"))\", transport: tcp, record: {path: \(dir.path)/rec, segment_duration: 2s}, "
                + "hls: {variant: mpegts, segment_duration: 1s}}\n"
        }
        var nodes: [Node] = []
        defer { for n in nodes { n.child.stop() } }
        for name in ["n1", "n2", "n3"] {
            let rtsp = FreePort.tcp()
            let nodeDir = dir.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: nodeDir, withIntermediateDirectories: true)
            let yaml = """
            catalog: {postgres: "\(pg.url)"}
            node: {name: \(name), lease: 2.5s}
            server: {rtsp: {listen: "127.0.0.1:\(rtsp)"}}
            streams:
            \(streams)
            """
            let (child, port, _) = try Servers.serve(yaml, dir: nodeDir, listen: FreePort.tcp())
            nodes.append(Node(name: name, child: child, http: port, rtsp: rtsp))
        }
        let names = (0..<cameras.count).map { "cam\($0)" }

        // Every camera gets one owner, the same in every node's /api/fleet; the first node
        // took them all, and hands each idle one to its first choice once the others joined.
        let first = Dictionary(uniqueKeysWithValues: names.map { ($0, Rendezvous.ranking(stream: $0, nodes: nodes.map(\.name))[0]) })
        var owners: [String: String] = [:]
        let placedBy = Date().addingTimeInterval(40)
        while Date() < placedBy {
            owners = Self.leases(nodes[0])
            if owners == first, nodes.dropFirst().allSatisfy({ Self.leases($0) == owners }) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        try #require(owners == first, "leases: \(owners), first choices: \(first)")

        // A stream made through one node's API reaches every node at once, and one node reads it.
        let made = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                                          "-d", #"{"name": "lobby", "source": "testsrc://?size=160x90&fps=5&gop=5", "preview": false}"#,
                                                          "http://127.0.0.1:\(nodes[1].http)/api/streams"], timeout: 10)
        #expect(made.stdout == "201", "POST /api/streams: \(made.stdout)")
        let spreadBy = Date().addingTimeInterval(5)
        var seen: [String] = []
        var lobbyOwner: String?
        while Date() < spreadBy {
            seen = nodes.filter { n in Self.api(StreamView.self, "http://127.0.0.1:\(n.http)/api/streams/lobby") != nil }.map(\.name)
            lobbyOwner = Self.leases(nodes[2])["lobby"]
            if seen.count == nodes.count && lobbyOwner != nil { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(seen.count == nodes.count, "lobby known to \(seen)")
        #expect(lobbyOwner != nil)

        // From here on, every 100 ms: no camera read by two processes at once.
        let watch = DoubleReadWatch(ports: cameras.map(\.port))
        watch.start()
        defer { watch.stop() }

        // Each camera is read by its owner alone.
        let settledBy = Date().addingTimeInterval(15)
        var readBy: [String: Set<Int32>] = [:]
        while Date() < settledBy {
            readBy = Dictionary(uniqueKeysWithValues: zip(names, cameras.map { Self.readers(port: $0.port) }))
            if names.allSatisfy({ n in readBy[n] == [nodes.first { $0.name == owners[n] }!.pid] }) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        for n in names { #expect(readBy[n] == [nodes.first { $0.name == owners[n] }!.pid], "\(n) owned by \(owners[n] ?? "-") read by \(readBy[n] ?? [])") }

        // A viewer on a node that does not own the camera: RTSP pulled from the owner, HLS
        // redirected to it.
        let cam = names[0]
        let owner = nodes.first { $0.name == owners[cam] }!
        let other = nodes.first { $0.name != owners[cam] }!
        let rtspRead = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-count_frames", "-read_intervals", "%+3",
                                                                "-select_streams", "v", "-show_entries", "stream=nb_read_frames,width", "-of", "csv=p=0",
                                                                "rtsp://127.0.0.1:\(other.rtsp)/\(cam)"], timeout: 60)
        let fields = rtspRead.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        #expect(fields.first == "320", "ffprobe through \(other.name): \(rtspRead.output.prefix(400))")
        #expect((Int(fields.last ?? "") ?? 0) >= 15, "frames through \(other.name): \(rtspRead.output.prefix(400))")
        #expect(Self.readers(port: cameras[0].port) == [owner.pid], "the camera stays read by its owner alone")
        let head = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                                                          "http://127.0.0.1:\(other.http)/streams/\(cam)/hls/index.m3u8"], timeout: 10)
        #expect(head.stdout == "307 http://127.0.0.1:\(owner.http)/streams/\(cam)/hls/index.m3u8", "HLS on \(other.name): \(head.stdout)")
        let snap = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                                                          "http://127.0.0.1:\(other.http)/streams/\(cam)/snapshot.jpg"], timeout: 10)
        #expect(snap.stdout == "307 http://127.0.0.1:\(owner.http)/streams/\(cam)/snapshot.jpg", "snapshot on \(other.name): \(snap.stdout)")
        let hls = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0",
                                                           "http://127.0.0.1:\(other.http)/streams/\(cam)/hls/index.m3u8"], timeout: 60)
        #expect(hls.stdout.hasPrefix("320"), "HLS through the redirect: \(hls.output.prefix(300))")
        if let s = Self.api(StreamView.self, "http://127.0.0.1:\(other.http)/api/streams/\(cam)") {
            #expect(s.owner == owner.name)
            #expect(s.node == other.name)
        }

        // Some recording on every camera (2 s segments), then the node with the most cameras
        // is killed.
        Thread.sleep(forTimeInterval: 5)
        owners = Self.leases(nodes[0])
        let counts = Dictionary(grouping: owners.keys, by: { owners[$0]! })
        let victim = nodes.max { (counts[$0.name]?.count ?? 0) < (counts[$1.name]?.count ?? 0) }!
        let moved = counts[victim.name] ?? []
        try #require(!moved.isEmpty)
        let survivors = nodes.filter { $0.name != victim.name }
        let killedAt = Date()
        victim.child.kill()
        var liveAfter: [String: Double] = [:]
        while Date().timeIntervalSince(killedAt) < 15 && liveAfter.count < moved.count {
            for n in survivors {
                guard let list = Self.api([StreamView].self, "http://127.0.0.1:\(n.http)/api/streams") else { continue }
                for s in list {
                    let name = s.stream.name
                    guard moved.contains(name), liveAfter[name] == nil, s.owner == n.name, s.stream.state == .live else { continue }
                    liveAfter[name] = Date().timeIntervalSince(killedAt)
                }
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        print("fleet: \(victim.name) killed holding \(moved.sorted()); live again after \(liveAfter.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.2f", $0.value)) s" })")
        for m in moved { #expect((liveAfter[m] ?? 99) <= 5, "\(m) live again after \(liveAfter[m] ?? -1) s") }

        // The killed node's recordings: listed and played from another node.
        let m = moved.sorted()[0]
        let listing = Self.api(RecordingListing.self, "http://127.0.0.1:\(survivors[0].http)/api/recordings/\(m)")
        #expect((listing?.segments ?? 0) >= 1, "recordings of \(m) on \(survivors[0].name): \(String(describing: listing))")
        let rows = try pg.psql("SELECT count(*) FROM segments WHERE stream = '\(m)' AND path LIKE '%/\(victim.name)/%'")
        #expect((Int(rows.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1, "segments the killed node catalogued: \(rows)")
        let played = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                                              "http://127.0.0.1:\(survivors[0].http)/streams/\(m)/recording.m3u8"], timeout: 60)
        #expect((Double(played.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 2, "recording of \(m) from \(survivors[0].name): \(played.output.prefix(300))")

        // The killed node returns while one of its cameras is watched where it moved: that one
        // stays (its viewer plays on), the idle ones go back to it.
        let watched = moved.sorted()[0]
        let holderName = Self.leases(survivors[0])[watched]
        let holder = try #require(survivors.first { $0.name == holderName }, "\(watched) held by \(holderName ?? "nobody")")
        let viewerStart = Date()
        let viewer = try ChildProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-stats", "-rtsp_transport", "tcp",
                                                          "-i", "rtsp://127.0.0.1:\(holder.rtsp)/\(watched)", "-t", "22", "-f", "null", "-"])
        Thread.sleep(forTimeInterval: 2)
        let returnDir = dir.appendingPathComponent(victim.name)
        let yaml = try String(contentsOf: returnDir.appendingPathComponent("config.yaml"), encoding: .utf8)
        let (back, backPort, _) = try Servers.serve(yaml, dir: returnDir, listen: FreePort.tcp())
        nodes.append(Node(name: victim.name, child: back, http: backPort, rtsp: victim.rtsp))
        let idle = Set(moved).subtracting([watched])
        let returnBy = Date().addingTimeInterval(25)
        var now = Self.leases(holder)
        while Date() < returnBy {
            now = Self.leases(holder)
            if idle.allSatisfy({ now[$0] == victim.name }) && Date().timeIntervalSince(viewerStart) > 16 { break }
            Thread.sleep(forTimeInterval: 0.5)
        }
        for i in idle { #expect(now[i] == victim.name, "idle \(i) back at \(victim.name): \(now[i] ?? "-")") }
        #expect(now[watched] == holder.name, "the watched \(watched) stays at \(holder.name) while watched: \(now[watched] ?? "-")")
        #expect(viewer.wait(timeout: 30))
        #expect(viewer.exitStatus == 0 && Date().timeIntervalSince(viewerStart) >= 21, "the viewer of \(watched): \(viewer.stderr.suffix(300))")

        watch.stop()
        #expect(watch.violations.isEmpty, "read by two processes at once: \(watch.violations.prefix(5))")
        #expect(watch.checks > 100)
    }
}

/// Checks every 100 ms that no camera port has two readers.
final class DoubleReadWatch: @unchecked Sendable {
    private let ports: [Int]
    private let lock = NSLock()
    private var _violations: [String] = []
    private var _checks = 0
    private var running = true
    private var thread: Thread?

    init(ports: [Int]) { self.ports = ports }

    func start() {
        let t = Thread { [self] in
            while lock.withLock({ running }) {
                for p in ports {
                    let r = FleetServeTests.readers(port: p)
                    if r.count > 1 { lock.withLock { _violations.append("port \(p): \(r.sorted())") } }
                }
                lock.withLock { _checks += 1 }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        thread = t
        t.start()
    }

    func stop() { lock.withLock { running = false } }
    var violations: [String] { lock.withLock { _violations } }
    var checks: Int { lock.withLock { _checks } }
}
