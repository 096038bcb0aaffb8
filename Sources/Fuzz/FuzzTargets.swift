import Foundation
import MediaCore
import Relay
import StampedSource
import Demux
import IngestServer
import Wire
import Access
import Mux

/// What the fuzzers feed: input from a config file or the network that must never crash the
/// process. Each target takes arbitrary bytes.
enum FuzzTargets {
    static let names = ["config", "url", "hls", "timeline", "rtmp", "demux", "flvfeed", "rtsp", "mp4", "webrtc", "evidence", "onvif", "talk"]

    static func run(_ target: String, _ bytes: [UInt8]) {
        _ = silenced
        let text = String(decoding: bytes, as: UTF8.self)
        switch target {
        case "config":
            _ = try? Configuration.parse(text, sources: sources)
        case "url":
            _ = Redactor.redact(text)
            _ = Redactor.redact(text, hideStreamKey: true)
            _ = Redactor.scrub(text)
            _ = sources.validate(url: text)
            _ = Reachability(url: text, listen: false)
            // An SRT caller's stream ID arrives from the network, before any credential.
            _ = SRTStreamID(text)
            _ = SRTStreamID.withoutSecret(text)
            // A proxy's X-Forwarded-For and the addresses in it, as the authorizer reads them.
            _ = TrustedProxies([IPNetwork("127.0.0.1")!, IPNetwork("10.0.0.0/8")!]).client(peer: "127.0.0.1", forwardedFor: text)
            _ = IPNetwork(text)?.contains(IPAddress("::1")!)
            // A camera's URL as LiveRelay's RTSP client takes it apart (credentials, [IPv6], port).
            _ = RTSPURL(text)?.withoutCredentials
        case "hls":
            // First line: a query or a glob; the rest: a playlist or a name.
            let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            let head = String(parts.first ?? ""), rest = parts.count > 1 ? String(parts[1]) : ""
            _ = HLSPlaylist.appendingQuery(head, to: rest)
            _ = Glob.matches(head, rest)
            _ = HLSStore.parsePart(head)
        case "timeline":
            timeline(bytes)
        case "rtmp":
            rtmp(bytes)
        case "demux":
            demux(bytes)
        case "flvfeed":
            flvFeed(bytes)
        case "rtsp":
            RTSPWireFuzz.run(bytes)
            RTSPCamera.serve(bytes)
        case "mp4":
            mp4(bytes)
        case "webrtc":
            webrtc(bytes)
        case "evidence":
            evidence(bytes)
        case "onvif":
            ONVIFCameraFuzz.run(bytes)
        case "talk":
            talk(bytes)
        default:
            break
        }
    }

    static let silenced: Void = FFmpegLog.silence()

    /// A talker's RTP (after SRTP), as a talk session takes it: each length-prefixed piece read
    /// as an RTP packet, its payload decoded as Opus and encoded for a camera's speaker (G.711
    /// and AAC, as `TalkEncoder` does in production); and the bytes as a talk offer. The encoders
    /// are kept across inputs (a fuzzer runs one input at a time), as a talk keeps its own.
    nonisolated(unsafe) static let talkEncoders: [TalkEncoder] = [TalkFormat(encoding: "PCMU", payloadType: 0, clockRate: 8000),
                                              TalkFormat(encoding: "MPEG4-GENERIC", payloadType: 96, clockRate: 16000, config: [0x14, 0x08])]
        .compactMap { try? TalkEncoder(format: $0) }
    static func talk(_ bytes: [UInt8]) {
        var i = 0
        while i + 2 <= bytes.count {
            let n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            let piece = Array(bytes[(i + 2)..<min(bytes.count, i + 2 + n)])
            i += 2 + n
            guard let p = RTPPacket(parsing: piece) else { continue }
            for e in talkEncoders { _ = e.encode(opus: p.payload) }
        }
        if let offer = SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) {
            for m in offer.media { _ = (m.direction, m.formats.first { $0.codec == "opus" }) }
        }
    }

    /// An evidence bundle from anyone, as `verify-export --key` reads it: the bytes as an
    /// archive; then as a manifest signed with the key given (so the checks after the signature
    /// run on what the bytes say: files, pieces with any offsets and lengths, chain links), in an
    /// archive with one clip.
    static let evidenceKey = NodeKey.ephemeral()
    static func evidence(_ bytes: [UInt8]) {
        func verify(_ archive: [UInt8]) {
            _ = EvidenceBundle.verify(length: archive.count, publicKey: evidenceKey.publicKey) { offset, count in
                guard offset >= 0, count >= 0, offset <= archive.count - count else { return nil }
                return Array(archive[offset..<(offset + count)])
            }
        }
        verify(bytes)
        guard let signature = try? evidenceKey.sign(bytes) else { return }
        var archive: [UInt8] = []
        let clip = Array(bytes.prefix(4096))
        for (name, member) in [("incident-1/cam1.mp4", clip), ("incident-1/manifest.json", bytes), ("incident-1/manifest.json.sig", Array(signature.utf8))] {
            guard let header = Tar.header(name: name, size: member.count, mtime: 0) else { return }
            archive += header + member + Tar.padding(after: member.count)
        }
        verify(archive + Tar.end)
    }

    /// What a WebRTC peer sends: the WHEP/WHIP offer (SDP text), STUN checks and RTCP on the
    /// shared UDP port, and a WHIP publisher's RTP, rebuilt into packets by the same
    /// `RTPPushSource` the ingest reads (H.264 or H.265, by the first byte's low bit, and Opus;
    /// datagrams framed by 2-byte lengths).
    static func webrtc(_ bytes: [UInt8]) {
        if let m = STUNMessage(parsing: bytes) {
            _ = m.fingerprintMatches(bytes)
            _ = m.integrityInput(bytes)
            _ = m.username
            _ = m.serialized(integrity: { _ in [UInt8](repeating: 0, count: 20) })
        }
        _ = RTCPMessage.parse(bytes)
        if let offer = SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) {
            for m in offer.media { _ = (offer.credentials(m), offer.fingerprint(m)) }
        }
        // A camera's answer, parsed as the RTSP client parses it, and parameter sets as they come
        // (extradata, sprop, in band).
        if let camera = SessionDescription(parsing: String(decoding: bytes, as: UTF8.self), limits: .camera) {
            for m in camera.media {
                for syntax in [ParameterSets.Syntax.h264, .h265] { _ = ParameterSets(fmtp: m.formats.first?.parameters ?? [:], syntax: syntax).annexB }
            }
        }
        for syntax in [ParameterSets.Syntax.h264, .h265] {
            var sets = ParameterSets(extradata: bytes, syntax: syntax)
            sets.note(bytes)
            _ = (sets.codecString, sets.profileIDC, sets.annexB)
        }
        let hevc = (bytes.first ?? 0) & 1 == 1
        let sections = [SessionDescription.Media(kind: "video", formats: [.init(payloadType: 102, codec: hevc ? "h265" : "h264", clockRate: 90000,
                                                                                  parameters: hevc && (bytes.first ?? 0) & 2 != 0 ? ["sprop-max-don-diff": "2"] : [:])]),
                        SessionDescription.Media(kind: "audio", formats: [.init(payloadType: 111, codec: "opus", clockRate: 48000, channels: 2)])]
        guard let source = try? RTPPushSource(sections: sections, url: "whip://fuzz", readTimeout: 0, interruptHandle: InterruptHandle()) else { return }
        var i = 0, arrival: UInt64 = 1_000_000_000
        while i + 2 <= bytes.count {
            let n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            let end = min(bytes.count, i + 2 + n)
            source.push(Array(bytes[(i + 2)..<end]), arrival: arrival)
            arrival &+= 10_000_000
            i = end
        }
        source.finish()
        if (try? source.probe(timeout: 0)) != nil {
            while let p = try? source.readPacket() { _ = p.size }
        }
    }

    /// A recording file as the archive reads it back (a file altered on disk, a reindex of
    /// anything in a record directory): its index, each fragment's decode times moved as an
    /// export does, the playlist and the clip over it; and a Range header against its length.
    static func mp4(_ bytes: [UInt8]) {
        let path = NSTemporaryDirectory() + "liverelay-fuzz-\(getpid()).mp4"
        defer { unlink(path) }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return }
        _ = ByteRange.parse(Substring(String(decoding: bytes.prefix(64), as: UTF8.self)), length: bytes.count)
        guard let index = try? RecordedFileIndex.read(path: path) else { return }
        for f in index.fragments {
            guard var moof = RecordingExport.read(path: path, offset: f.offset, count: f.moofLength) else { continue }
            _ = MP4.settingDecodeTimes(moof: &moof, tracks: index.tracks) { _, t in t &+ 90_000 }
        }
        let segment = RecordedSegment(stream: "f", path: path, start: Date(timeIntervalSince1970: 0), duration: 10, bytes: bytes.count, codecs: "", sha256: "")
        let selection = RecordingSelection.select([segment, segment], from: Date(timeIntervalSince1970: 1), to: Date(timeIntervalSince1970: 9),
                                                  cache: RecordedFileIndexCache())
        _ = RecordingPlaylist.make(selection) { $0 }
        if let export = RecordingExport(selection, length: 5) {
            for i in export.pieces.indices { _ = export.bytes(ofPiece: i, read: { RecordingExport.read(path: $0, offset: $1, count: $2) }) }
        }
    }

    /// Bytes from a publisher into the one-port RTMP ingest's chunk reader (after a valid
    /// handshake when the first byte is even, so that fuzzing reaches the chunk stream), fed in
    /// varying slices, AMF0 decoded from every message: the reader and decoder RTMPSession runs.
    static func rtmp(_ bytes: [UInt8]) {
        var r = RTMPChunkReader()
        var input = bytes
        if let first = bytes.first, first & 1 == 0 {
            input = [3] + [UInt8](repeating: 0, count: 1536) + [UInt8](repeating: 0, count: 1536) + bytes.dropFirst()
        }
        var i = 0
        var step = 1
        while i < input.count {
            let n = min(input.count - i, step)
            guard let (_, messages) = try? r.feed(input[i..<i + n]) else { return }
            for m in messages { _ = try? AMF0.decodeAll(m.payload) }
            i += n
            step = step % 997 + 37
        }
    }

    static let sources: SourceOpener = {
        var o = SourceOpener()
        o.register(scheme: StampedSource.scheme, open: StampedSource.open, validate: StampedSource.validate)
        return o
    }()

    /// Real H.264 packets, re-timed with the input's 8-byte words as pts, dts, duration and
    /// arrival steps, through the packet timeline.
    static let packets: (packets: [Packet], epoch: IngestEpoch)? = {
        guard let source = try? TestSource(url: "testsrc://?size=64x64&fps=30&gop=5&frames=10&realtime=false") else { return nil }
        var out: [Packet] = []
        while let p = try? source.readPacket() { out.append(p) }
        return (out, IngestEpoch(generation: 1, streams: source.streams))
    }()

    /// Bytes as a source: libavformat through IngestSession (probe, open, read every packet),
    /// the path a publisher's or a camera's bytes take. Bounded by packets and deadlines. An
    /// input of odd length comes as a live source does, through a pipe (an `exec:` command's
    /// output): probed for 0.1 s, its late tracks described from their first packets.
    static func demux(_ bytes: [UInt8]) {
        var o = SourceOptions()
        o.openTimeout = 2
        o.readTimeout = 2
        func readAll(_ session: IngestSession) {
            var n = 0
            while n < 500, let p = try? session.readPacket() {
                _ = p.data.count
                n += 1
            }
        }
        if bytes.count % 2 == 1 {
            _ = ignoreBrokenPipes
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let writer = Thread {
                var at = 0
                while at < bytes.count {
                    let n = bytes.withUnsafeBytes { write(writeEnd, $0.baseAddress! + at, $0.count - at) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { break }
                    at += n
                }
                close(writeEnd)
            }
            writer.start()
            // FFmpeg's pipe protocol does not close the descriptor: this does, once it is read.
            if let session = try? IngestSession(url: "pipe:\(readEnd)", options: o) { readAll(session) }
            close(readEnd)
            return
        }
        let path = NSTemporaryDirectory() + "liverelay-fuzz-demux-\(getpid())"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return }
        defer { unlink(path) }
        guard let session = try? IngestSession(url: path, options: o) else { return }
        readAll(session)
    }

    /// A write to a pipe whose reader gave up fails (EPIPE) instead of ending the process.
    static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The bytes as an FLV file whose tags a publisher pushes into LiveRelay's one-port ingest:
    /// libavformat probes the first ones from memory, then packets are built from the tags
    /// directly (H.264 and AAC) or by the demuxer.
    static func flvFeed(_ bytes: [UInt8]) {
        let feed = FLVFeed()
        if bytes.count > 4 { feed.start(headerFlags: bytes[4], announced: bytes[4] & 0x80 != 0) }
        var i = 13
        while i + 11 <= bytes.count {
            let n = Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            let ts = UInt32(bytes[i + 4]) << 16 | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) | UInt32(bytes[i + 7]) << 24
            let end = min(bytes.count, i + 11 + n)
            _ = feed.push(type: bytes[i], timestamp: ts, payload: Array(bytes[(i + 11)..<end]))
            i = end + 4
        }
        feed.finish()
        var o = SourceOptions()
        o.openTimeout = 2
        o.readTimeout = 2
        guard let source = try? FLVFeedSource(feed: feed, url: "publish://fuzz", options: o, interruptHandle: InterruptHandle()) else { return }
        var count = 0
        while count < 500, let p = try? source.readPacket() {
            _ = p.data.count
            count += 1
        }
    }

    static func timeline(_ bytes: [UInt8]) {
        guard let (packets, epoch) = packets, !packets.isEmpty else { return }
        let words: [Int64] = stride(from: 0, to: bytes.count - 7, by: 8).map { i in
            bytes[i..<i + 8].enumerated().reduce(Int64(0)) { $0 | Int64($1.element) << (8 * Int64($1.offset)) }
        }
        let timeline = PacketTimeline()
        var arrival: UInt64 = 1
        var i = 0
        while i + 3 < words.count {
            let p = packets[i / 4 % packets.count]
            arrival &+= UInt64(truncatingIfNeeded: words[i + 3]) & 0xFFFF_FFFF
            let pts: Int64? = words[i] == Int64.min ? nil : words[i]
            if let re = try? p.retimed(pts: pts, dts: words[i + 1] & 1 == 0 ? words[i + 1] : nil, duration: words[i + 2], arrivalNanos: arrival) {
                _ = timeline.place(RelayPacket(packet: re, epoch: epoch))
            }
            if words[i] & 0xFF == 7 { timeline.restart() }
            i += 4
        }
    }
}
