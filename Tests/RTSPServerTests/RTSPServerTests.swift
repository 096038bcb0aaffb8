import Testing
import NIOCore
import NIOEmbedded
import Wire
@testable import RTSPServer

/// The RTSP server's parts a player's bytes reach first: the request decoder, the Transport
/// choice, the stream a URI names. End to end (ffmpeg, GStreamer, VLC reading rtsp://) is in
/// liverelayTests' RTSPServeTests; a hostile player in HostileRTSPPlayerTests.
@Suite(.tags(.fast)) struct RTSPServerTests {
    /// Requests and interleaved frames out of bytes that arrive in any slices.
    func decode(_ chunks: [[UInt8]]) throws -> [RTSPFrame] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(RTSPRequestDecoder()))
        var out: [RTSPFrame] = []
        for c in chunks {
            try channel.writeInbound(channel.allocator.buffer(bytes: c))
            while let m = try channel.readInbound(as: RTSPFrame.self) { out.append(m) }
        }
        return out
    }

    @Test func requestsAndInterleavedFramesComeOutWholeFromAnySlices() throws {
        let bytes = Array("OPTIONS rtsp://h/cam RTSP/1.0\r\nCSeq: 1\r\n\r\n".utf8) + [0x24, 1, 0, 3, 9, 9, 9]
            + Array("ANNOUNCE rtsp://h/cam RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\ncontent-type: x\r\n\r\nabcd".utf8)
        for size in [1, 2, 7, bytes.count] {
            let chunks = stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min(bytes.count, $0 + size)]) }
            let got = try decode(chunks)
            #expect(got.count == 3, "slices of \(size)")
            guard got.count == 3, case .request(let a) = got[0], case .interleaved(channel: let ch, payload: let payload) = got[1], case .request(let b) = got[2] else { continue }
            #expect(a.method == "OPTIONS" && a.cseq == "1")
            #expect(ch == 1 && Array(payload) == [9, 9, 9])
            #expect(b.method == "ANNOUNCE" && b.body == Array("abcd".utf8) && b.header("Content-Type") == "x")
        }
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\n\r\n",
        "OPTIONS rtsp://h/cam RTSP/1.0\r\nno colon here\r\n\r\n",
        "OPTIONS rtsp://h/cam RTSP/1.0\r\nContent-Length: -1\r\n\r\n",
        "OPTIONS rtsp://h/cam RTSP/1.0\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "OPTIONS rtsp://h/cam RTSP/1.0\r\nContent-Length: 65537\r\n\r\n",
        "OPT\u{0}IONS rtsp://h/cam RTSP/1.0\r\n\r\n",
        "OPTIONS rtsp://h/cam RTSP/1.0\r\n" + String(repeating: "X: y\r\n", count: 65) + "\r\n",
    ])
    func aBadRequestIsAnErrorNotATrap(_ text: String) {
        #expect(throws: (any Error).self) { _ = try decode([Array(text.utf8)]) }
    }

    @Test func aHeadThatNeverEndsIsRefusedAtItsLimit() {
        #expect(throws: (any Error).self) { _ = try decode([Array("OPTIONS rtsp://h/cam RTSP/1.0\r\nX: ".utf8) + Array(repeating: 0x41, count: 17 << 10)]) }
    }

    @Test func theFirstServableTransportIsChosen() {
        #expect(RTSPTransport.choose("RTP/AVP;multicast, RTP/AVP/TCP;unicast;interleaved=4-5", track: 0) == .interleaved(rtp: 4, rtcp: 5))
        #expect(RTSPTransport.choose("RTP/AVP/TCP;unicast", track: 2) == .interleaved(rtp: 4, rtcp: 5))
        #expect(RTSPTransport.choose("RTP/AVP;unicast;client_port=5000-5001", track: 0) == .udp(rtpPort: 5000, rtcpPort: 5001))
        // Numbers a player may send that once overflowed `a + 1`, or that fit no port.
        for bad in ["RTP/AVP;client_port=9223372036854775807", "RTP/AVP;client_port=65535", "RTP/AVP;client_port=-1", "RTP/SAVP;client_port=5000",
                    "", ";;;", "RTP/AVP;multicast;client_port=5000"] {
            #expect(RTSPTransport.choose(bad, track: 0) == nil, "\(bad)")
        }
        // Channels that fit no byte: the server picks the track's own, and says so in its answer.
        #expect(RTSPTransport.choose("RTP/AVP/TCP;interleaved=9223372036854775807", track: 1) == .interleaved(rtp: 2, rtcp: 3))
        #expect(RTSPTransport.choose("RTP/AVP/TCP;interleaved=255", track: 0) == .interleaved(rtp: 0, rtcp: 1))
        #expect(RTSPTransport.choose("RTP/AVP/TCP", track: 200) == nil)
    }

    @Test func theStreamAURINames() {
        #expect(RTSPServerSession.target("rtsp://h:8554/cam")! == ("cam", nil))
        #expect(RTSPServerSession.target("rtsp://h:8554/cam/streamid=1")! == ("cam", 1))
        #expect(RTSPServerSession.target("rtsp://h/cam%20two?x=1")! == ("cam two", nil))
        #expect(RTSPServerSession.target("/cam")! == ("cam", nil))
        // A stream's sub stream, served as NAME_sub.
        #expect(RTSPServerSession.target("rtsp://h:8554/cam/sub")! == ("cam_sub", nil))
        #expect(RTSPServerSession.target("rtsp://h:8554/cam/sub/streamid=0")! == ("cam_sub", 0))
        #expect(RTSPServerSession.target("rtsp://h:8554/cam/main") == nil)
        for bad in ["rtsp://h", "rtsp://h/", "rtsp://h/a/b", "rtsp://h/cam/streamid=64", "rtsp://h/cam/streamid=99999999999999999999999",
                    "rtsp://h/cam/streamid=-1", "rtsp://h/%ff", ""] {
            #expect(RTSPServerSession.target(bad) == nil, "\(bad)")
        }
    }
}
