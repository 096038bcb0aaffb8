import Testing
@testable import IngestServer

/// The RTMP session layer's parsers on crafted and random input: messages reassembled across
/// chunk sizes and header forms; garbage throws or waits, never traps or grows without bound.
@Suite(.tags(.fast)) struct RTMPChunkReaderTests {
    func handshake(_ r: inout RTMPChunkReader) throws {
        let c0c1 = [UInt8(3)] + [UInt8](repeating: 7, count: 1536)
        let (reply, messages) = try r.feed(c0c1)
        #expect(reply?.count == 1 + 1536 + 1536 && reply?.first == 3 && Array(reply![1537...]) == Array(c0c1[1...]))
        #expect(messages.isEmpty)
        _ = try r.feed([UInt8](repeating: 0, count: 1536))
    }

    @Test func aMessageSplitAcrossChunksIsReassembled() throws {
        var r = RTMPChunkReader()
        try handshake(&r)
        let payload = (0..<300).map { UInt8($0 & 0xFF) }
        // Our own writer cuts it into 128-byte chunks (type-0 header, then type-3): read it back,
        // fed one byte at a time.
        let bytes = RTMPChunkWriter.chunks(csid: 6, typeID: 9, streamID: 1, timestamp: 1234, payload: payload, chunkSize: 128)
        var got: [RTMPChunkReader.Message] = []
        for b in bytes { got += try r.feed([b]).messages }
        #expect(got.count == 1)
        #expect(got.first?.payload == payload && got.first?.timestamp == 1234 && got.first?.typeID == 9 && got.first?.streamID == 1)
        // A chunk size change applies to what follows.
        _ = try r.feed(RTMPChunkWriter.chunks(csid: 2, typeID: 1, streamID: 0, payload: RTMPChunkWriter.u32(4096), chunkSize: 128))
        #expect(r.chunkSize == 4096)
        let big = [UInt8](repeating: 9, count: 5000)
        let m = try r.feed(RTMPChunkWriter.chunks(csid: 6, typeID: 9, streamID: 1, timestamp: 2000, payload: big, chunkSize: 4096)).messages
        #expect(m.count == 1 && m.first?.payload.count == 5000)
    }

    @Test func garbageNeverTraps() {
        var rng = SystemRandomNumberGenerator()
        var refused = 0
        // 100 rounds here (53 s for 500 in a debug build); scripts/fuzz.sh rtmp runs millions.
        for round in 0..<100 {
            var r = RTMPChunkReader()
            var input: [UInt8] = round % 2 == 0 ? [3] + [UInt8](repeating: 1, count: 3072) : []
            input += (0..<Int.random(in: 0...4000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            do {
                var i = 0
                while i < input.count {
                    let n = min(input.count - i, Int.random(in: 1...700, using: &rng))
                    _ = try r.feed(input[i..<i + n])
                    i += n
                }
            } catch {
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    @Test func amf0RoundTripsAndRejectsGarbage() throws {
        let values: [AMF0] = [.string("connect"), .number(1), .object([("app", .string("live")), ("tcUrl", .string("rtmp://h/live"))]),
                              .null, .boolean(true), .ecmaArray([("width", .number(640))]), .strictArray([.number(1), .string("x")])]
        #expect(try AMF0.decodeAll(AMF0.encode(values)) == values)
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0...64)).map { _ in UInt8.random(in: 0...12) }
            _ = try? AMF0.decodeAll(bytes)
        }
        // Deep nesting is refused, not followed.
        var deep: [UInt8] = [3]
        for _ in 0..<100 { deep += [0, 1, 0x61, 3] }
        #expect(throws: AMF0.DecodeError.self) { try AMF0.decodeAll(deep) }
    }

    /// Found by the rtmp fuzz target: a type-1 header with a shorter length arriving while a
    /// longer message is half read on the same chunk stream trapped on a negative range.
    @Test func aNewHeaderMidMessageStartsANewMessage() throws {
        var r = RTMPChunkReader()
        try handshake(&r)
        let long = RTMPChunkWriter.chunks(csid: 6, typeID: 9, streamID: 1, timestamp: 0, payload: [UInt8](repeating: 1, count: 300), chunkSize: 128)
        _ = try r.feed(long.prefix(12 + 128))                // the first chunk of three
        // Type 1 on the same chunk stream: delta 40, length 10, type 9.
        let short: [UInt8] = [0x46, 0, 0, 40, 0, 0, 10, 9] + [UInt8](repeating: 2, count: 10)
        let m = try r.feed(short).messages
        #expect(m.count == 1 && m.first?.payload == [UInt8](repeating: 2, count: 10))
    }
}
