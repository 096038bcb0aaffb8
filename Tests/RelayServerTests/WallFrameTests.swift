import Testing
import TestSupport
import NIOCore
@testable import RelayServer

/// The wall's frame header is defined once (`WallFrame`): what the server writes sits where the
/// page reads it, and the page reads it only through the constants WallFrame emits.
@Suite(.ownThreads, .tags(.fast)) struct WallFrameTests {
    @Test func theHeaderIsWhereThePageReadsIt() {
        let b = WallFrame.encode(kind: .h264, flags: [.key, .capture], slot: 513, wallMillis: 1234.5, timestamp: -7, codec: "avc1.42C01E", payload: [9, 8, 7])
        let bytes = Array(b.readableBytesView)
        #expect(bytes[WallFrame.Offset.kind] == 1)
        #expect(bytes[WallFrame.Offset.flags] == 1 | 8)
        #expect(UInt16(bytes[WallFrame.Offset.slot]) << 8 | UInt16(bytes[WallFrame.Offset.slot + 1]) == 513)
        let time = bytes[WallFrame.Offset.time..<WallFrame.Offset.time + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(Double(bitPattern: time) == 1234.5)
        let ts = bytes[WallFrame.Offset.timestamp..<WallFrame.Offset.timestamp + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(Int64(bitPattern: ts) == -7)
        #expect(Int(bytes[WallFrame.Offset.codecLength]) == 11)
        #expect(Array(bytes[WallFrame.Offset.headerSize..<WallFrame.Offset.headerSize + 11]) == Array("avc1.42C01E".utf8))
        #expect(Array(bytes.suffix(3)) == [9, 8, 7])
    }

    @Test func thePageUsesTheConstantsAndNoBareNumbers() {
        let js = WallPage.script
        for name in ["WF.KEY", "WF.RESTART", "WF.SLATE", "WF.CAPTURE", "WF.KIND_H264", "WF.KIND_JPEG", "WF.KIND_AUDIO", "WF.HEADER", "WF.CODEC_LENGTH", "WF.TIMESTAMP"] {
            #expect(js.contains(name), "\(name)")
        }
        for bare in ["getUint8(0)", "getUint8(1)", "getUint16(2)", "getFloat64(4)", "getBigInt64(12)", "getUint8(20)", "buf, 21", "flags & 1)", "flags & 2)", "flags & 4)", "flags & 8)", "kind === 1", "kind === 2", "kind === 3"] {
            #expect(!js.contains(bare), "\(bare)")
        }
        #expect(WallFrame.javascript == "const WF = {KIND_H264: 1, KIND_JPEG: 2, KIND_AUDIO: 3, KEY: 1, RESTART: 2, SLATE: 4, CAPTURE: 8, KIND: 0, FLAGS: 1, SLOT: 2, TIME: 4, TIMESTAMP: 12, CODEC_LENGTH: 20, HEADER: 21};")
    }
}
