import Testing
import Foundation
import TestSupport
import Relay
import RelayAPI

/// Forwards of MPEG-TS over UDP and RTP (`udp://`, `rtp://`), unicast and multicast, for wall
/// decoders and IPTV gear: whole TS packets, seven to every UDP datagram, PCR on time, every stamped
/// picture read back from what a receiver got; a forward with no receiver keeps sending; a
/// multicast group (in a network namespace of its own, lo routed for 239/8) reaches two ffmpeg
/// readers and VLC at once.
@Suite(.ownThreads, .serialized) struct UDPForwardTests {
    /// What one receiving socket got in `seconds`.
    struct Received {
        var datagrams: [[UInt8]] = []
        /// The transport stream: the datagrams, RTP headers taken off.
        var ts: [UInt8] = []
        var problems: [String] = []
    }

    /// Datagrams arriving on `fds` for `seconds`, checked as MPEG-TS over UDP (`rtp[i]` false)
    /// or over RTP (RFC 2250: payload type 33, sequence numbers one apart).
    static func receive(_ fds: [Int32], rtp: [Bool], seconds: Double) -> [Received] {
        var out = [Received](repeating: Received(), count: fds.count)
        var lastSequence = [Int?](repeating: nil, count: fds.count)
        var buffer = [UInt8](repeating: 0, count: 65536)
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
            for (i, p) in polls.enumerated() where p.revents & Int16(POLLIN) != 0 {
                let n = recv(fds[i], &buffer, buffer.count, 0)
                guard n > 0 else { continue }
                let d = Array(buffer[0..<n])
                out[i].datagrams.append(d)
                var payload = d[...]
                if rtp[i] {
                    guard d.count > 12, d[0] == 0x80, d[1] & 0x7F == 33 else { out[i].problems.append("not RTP/MP2T: \(d.prefix(2))"); continue }
                    let sequence = Int(d[2]) << 8 | Int(d[3])
                    if let last = lastSequence[i], sequence != (last + 1) & 0xFFFF { out[i].problems.append("sequence \(last) → \(sequence)") }
                    lastSequence[i] = sequence
                    payload = d[12...]
                }
                if payload.count % 188 != 0 || payload.count > 1316 { out[i].problems.append("a datagram of \(payload.count) bytes of TS") }
                for start in stride(from: payload.startIndex, to: payload.endIndex, by: 188) where payload[start] != 0x47 {
                    out[i].problems.append("no sync byte at \(start)")
                }
                out[i].ts += payload
            }
        }
        return out
    }

    /// Every PCR in a transport stream, in 27 MHz ticks.
    static func pcrs(_ ts: [UInt8]) -> [Int] {
        var out: [Int] = []
        for start in stride(from: 0, to: ts.count - 187, by: 188) {
            let p = ts[start..<(start + 188)]
            let b = p.startIndex
            // An adaptation field, long enough, with its PCR flag.
            guard p[b + 3] & 0x20 != 0, p[b + 4] >= 7, p[b + 5] & 0x10 != 0 else { continue }
            let base = Int(p[b + 6]) << 25 | Int(p[b + 7]) << 17 | Int(p[b + 8]) << 9 | Int(p[b + 9]) << 1 | Int(p[b + 10]) >> 7
            let ext = Int(p[b + 10] & 1) << 8 | Int(p[b + 11])
            out.append(base * 300 + ext)
        }
        return out
    }

    @Test func unicastUDPAndRTPCarryWholeTSPacketsWithPCROnTimeAndNeedNoReceiver() throws {
        let udp = FreePort.boundLoopbackSocket(type: Int32(SOCK_DGRAM.rawValue))
        let rtp = FreePort.boundLoopbackSocket(type: Int32(SOCK_DGRAM.rawValue))
        defer { close(udp.fd); close(rtp.fd) }
        let nobody = FreePort.udp()
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30"
            preview: false
            forward: ["udp://127.0.0.1:\(udp.port)", "rtp://127.0.0.1:\(rtp.port)", "udp://127.0.0.1:\(nobody)"]
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let got = Self.receive([udp.fd, rtp.fd], rtp: [false, true], seconds: 4)
        for (name, r) in zip(["udp", "rtp"], got) {
            #expect(r.problems.isEmpty, "\(name): \(r.problems.prefix(5))")
            let sizes = "\(r.datagrams.count) datagrams, sizes \(Set(r.datagrams.map(\.count)).sorted().prefix(10))"
            if name == "udp" {
                // Seven TS packets in every datagram: a picture's tail, sent at once, filled out
                // with null packets (PID 0x1FFF).
                #expect(r.datagrams.count > 100 && r.datagrams.allSatisfy { $0.count == 1316 }, "udp: \(sizes)")
                let nulls = stride(from: 0, to: r.ts.count - 187, by: 188).filter { r.ts[$0 + 1] & 0x1F == 0x1F && r.ts[$0 + 2] == 0xFF }.count
                #expect(nulls > 30, "udp: \(nulls) null packets")
            } else {
                // FFmpeg's rtp_mpegts: seven TS packets fill most datagrams.
                #expect(r.datagrams.count > 100 && r.datagrams.filter { $0.count == 1328 }.count > r.datagrams.count / 3, "rtp: \(sizes)")
            }
            // PCR: rising, at most 100 ms apart (ISO 13818-1), and on the same clock as the pictures.
            let pcr = Self.pcrs(r.ts)
            let steps = zip(pcr, pcr.dropFirst()).map { $1 - $0 }
            #expect(pcr.count > 20 && steps.allSatisfy { $0 > 0 && $0 <= 2_700_000 }, "\(name): \(pcr.count) PCRs, steps \(steps.prefix(10))")
            let file = dir.appendingPathComponent("\(name).ts")
            try Data(r.ts).write(to: file)
            let p = try SRTReadTests.probeFile(file.path)
            #expect(p.report?.stampsRead == 60 && p.report?.width == 640, "\(name): \(p)")
        }
        // With no one at its port, the third forward keeps sending: no error, no reconnect.
        let view = try Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/cam")
        let lonely = try #require(view.forwards.first { $0.destination.hasSuffix(":\(nobody)") }, "\(view.forwards)")
        #expect(lonely.state == .running && lonely.reconnects == 0 && lonely.sent > 100 && lonely.lastError == nil, "\(lonely)")
        #expect(view.forwards.allSatisfy { $0.connections == 1 }, "\(view.forwards)")
    }

    /// Sources whose audio comes after the 0.1 s probe (a muxer that holds it back; here ffmpeg
    /// with the sound 0.5 s and 4 s late), each forwarded over UDP. `late`'s audio is described from
    /// its first packet and forwarded with the pictures, every datagram still whole (an audio
    /// packet's tail rides with the next picture's datagram); `later`'s comes after the 1.5 s
    /// allowed, so its forward carries the pictures alone and the log says the audio was left out.
    /// Before, both forwards failed at their header ("sample rate not set"), again and again.
    @Test func aSourceWhoseSoundComesLateIsForwardedWithIt() throws {
        let late = FreePort.boundLoopbackSocket(type: Int32(SOCK_DGRAM.rawValue))
        let later = FreePort.boundLoopbackSocket(type: Int32(SOCK_DGRAM.rawValue))
        defer { close(late.fd); close(later.fd) }
        func source(soundAfter seconds: Double) -> String {
            "exec:ffmpeg -hide_banner -v error -re -f lavfi -i testsrc2=size=320x180:rate=25 -itsoffset \(seconds) -f lavfi -i sine=frequency=1000:sample_rate=44100 -c:v libx264 -preset ultrafast -tune zerolatency -g 25 -c:a aac -f mpegts -"
        }
        let (serve, port, dir) = try Servers.serve("""
        streams:
          late: {source: "\(source(soundAfter: 0.5))", on_demand: false, preview: false, forward: ["udp://127.0.0.1:\(late.port)"]}
          later: {source: "\(source(soundAfter: 4))", on_demand: false, preview: false, forward: ["udp://127.0.0.1:\(later.port)"]}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        // Both live first (two encoders starting on a loaded machine), then 6 s of what they send.
        #expect(HostileCameraTests.waitLive(port, "late", timeout: 20) && HostileCameraTests.waitLive(port, "later", timeout: 20))
        let got = Self.receive([late.fd, later.fd], rtp: [false, false], seconds: 6)
        struct Probe: Decodable {
            struct Stream: Decodable { var codec_type: String; var codec_name: String?; var sample_rate: String?; var nb_read_packets: String? }
            var streams: [Stream]
        }
        var tracks: [String: [Probe.Stream]] = [:]
        for (name, r) in zip(["late", "later"], got) {
            #expect(r.problems.isEmpty, "\(name): \(r.problems.prefix(5))")
            #expect(r.datagrams.count > 100 && r.datagrams.allSatisfy { $0.count == 1316 }, "\(name): \(r.datagrams.count) datagrams, sizes \(Set(r.datagrams.map(\.count)).sorted().prefix(10))")
            let file = dir.appendingPathComponent("\(name).ts")
            try Data(r.ts).write(to: file)
            let probe = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,codec_name,sample_rate,nb_read_packets",
                                                                 "-of", "json", file.path], timeout: 30)
            tracks[name] = (try? JSONDecoder().decode(Probe.self, from: Data(probe.stdout.utf8)))?.streams ?? []
        }
        let sound = tracks["late"]?.first { $0.codec_type == "audio" }
        // 43 AAC frames a second from half a second on.
        #expect(sound?.codec_name == "aac" && sound?.sample_rate == "44100" && Int(sound?.nb_read_packets ?? "") ?? 0 > 60, "late: \(tracks["late"] ?? [])")
        #expect(tracks["late"]?.contains { $0.codec_type == "video" && Int($0.nb_read_packets ?? "") ?? 0 > 60 } == true, "late: \(tracks["late"] ?? [])")
        // The tone, heard whole from half a second on (a frame in 14 got through untimed).
        let heard = try TalkTests.heard(["-i", dir.appendingPathComponent("late.ts").path])
        print("UDPForwardTests: late sound forwarded: \(sound.map { "\($0)" } ?? "none"); heard \(heard)")
        #expect(heard.seconds > 3 && abs(heard.hz - 1000) < 50, "late: \(heard)")
        #expect(tracks["later"]?.map(\.codec_type) == ["video"], "later: \(tracks["later"] ?? [])")
        #expect(serve.stderr.contains("track left out") && serve.stderr.contains("media=audio"), "\(serve.stderr.suffix(800))")
        let view = try Servers.api(StreamView.self, "http://127.0.0.1:\(port)/api/streams/late")
        #expect(view.forwards.first?.reconnects == 0 && view.forwards.first?.lastError == nil, "\(view.forwards)")
    }

    @Test func aMulticastGroupReachesTwoFFmpegReadersAndVLC() throws {
        let ns = "lrmc\(getpid() % 100_000)"
        let ip = "/usr/sbin/ip"
        _ = try? ChildProcess.run(ip, ["netns", "del", ns], timeout: 10)
        for args in [["netns", "add", ns], ["-n", ns, "link", "set", "lo", "up"], ["-n", ns, "route", "add", "239.0.0.0/8", "dev", "lo"]] {
            let r = try ChildProcess.run(ip, args, timeout: 10)
            try #require(r.status == 0, "ip \(args): \(r.output)")
        }
        defer { _ = try? ChildProcess.run(ip, ["netns", "del", ns], timeout: 10) }
        // The namespace is this test's own: its group and port are no one else's.
        let group = "udp://239.1.1.1:5000"
        let (serve, _, dir) = try Servers.serve("""
        streams:
          cam:
            source: "testsrc://?size=640x360&fps=30&gop=30"
            preview: false
            forward: ["\(group)?ttl=1"]
        """, namespace: ns)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(dir.path, 0o755)
        let vlcFile = vlcDir.appendingPathComponent("vlc.ts").path
        // VLC refuses to run as root: as nobody, as a user would.
        let vlc = try ChildProcess(ip, ["netns", "exec", ns, "/usr/bin/timeout", "-k", "1", "20", "/usr/sbin/runuser", "-u", "nobody", "--",
                                        "/usr/bin/cvlc", "--play-and-exit", "--run-time=5", "udp://@239.1.1.1:5000",
                                        "--sout", "#std{access=file,mux=ts,dst=\(vlcFile)}"])
        defer { vlc.stop() }
        let readers = try (1...2).map { i in
            try ChildProcess(ip, ["netns", "exec", ns, "/usr/bin/timeout", "-k", "1", "20", "/usr/bin/ffmpeg", "-v", "error",
                                  "-i", "\(group)?timeout=5000000", "-t", "4", "-c", "copy", "-f", "mpegts", dir.appendingPathComponent("r\(i).ts").path])
        }
        for (i, r) in readers.enumerated() {
            #expect(r.wait(timeout: 25), "reader \(i + 1): \(r.stderr.suffix(300))")
            let p = try SRTReadTests.probeFile(dir.appendingPathComponent("r\(i + 1).ts").path)
            #expect(p.report?.stampsRead == 60 && p.report?.width == 640, "reader \(i + 1): \(p)")
        }
        #expect(vlc.wait(timeout: 25))
        let v = try SRTReadTests.probeFile(vlcFile)
        #expect(v.report?.stampsRead == 60 && v.report?.width == 640, "VLC: \(v); \((vlc.stdout + vlc.stderr).suffix(400))")
    }
}
