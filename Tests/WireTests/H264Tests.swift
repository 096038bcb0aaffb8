import Testing
import Wire

@Suite("H.264 bitstream", .tags(.fast))
struct H264Tests {
    @Test("Recovery point SEI found among other messages; truncated or odd SEI are not")
    func recoveryPoints() {
        let messages: [([UInt8], Bool)] = [([6, 1, 0xC4, 0x80], true), ([5, 2, 0xAA, 0xBB, 0x80], false), ([0xFF, 0x07, 1, 0, 0x80], false),
                                           ([5, 0xFF, 0x01], false), ([], false), ([5, 2, 0xAA, 0xBB, 6, 1, 0xC4, 0x80], true),
                                           ([0xFF, 0xFF, 0xFF, 0xFF], false), (Array(repeating: 0xFF, count: 100_000), false)]
        for (m, expected) in messages {
            #expect(H264.hasRecoveryPoint(sei: m) == expected, "\(m.prefix(8))")
        }
    }

    @Test("NAL units in both framings; lying lengths end the packet")
    func framings() {
        let annexB: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 9, 9]
        #expect(H264.annexBRanges(annexB).map { annexB[$0].first } == [0x67, 0x68, 0x65])
        let prefixed: [UInt8] = [0, 0, 0, 2, 0x67, 1, 0, 0, 0, 1, 0x68, 0xFF, 0xFF, 0xFF, 0xFF, 0x65]
        #expect(H264.lengthPrefixedRanges(prefixed, size: 4) == [4..<6, 10..<11])
        #expect(H264.lengthPrefixedRanges(prefixed, size: 3).count <= 2)
        #expect(H264.lengthPrefixedRanges([], size: 4).isEmpty)
        #expect(H264.lengthPrefixedRanges(prefixed, size: 0).isEmpty)
        #expect(H264.startsWithStartCode(annexB))
        #expect(!H264.startsWithStartCode([0, 0, 1]))
    }

    @Test("avcC: sets read, length-prefixed sets rebuilt; malformed records refused")
    func avcC() throws {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xDA], pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let record: [UInt8] = [1, 0x42, 0xC0, 0x1E, 0xFF, 0xE1, 0, 5] + sps + [1, 0, 4] + pps
        let c = try #require(AVCDecoderConfiguration(parsing: record))
        #expect(c.lengthSize == 4 && c.sps == [sps] && c.pps == [pps])
        #expect(c.lengthPrefixedParameterSets == [0, 0, 0, 5] + sps + [0, 0, 0, 4] + pps)
        #expect(H264.codecString(sps: sps) == "avc1.42C01E")
        #expect(AVCDecoderConfiguration(parsing: Array(record.dropLast())) == nil)
        #expect(AVCDecoderConfiguration(parsing: [1, 0x42, 0xC0, 0x1E, 0xFE, 0xE1, 0, 5] + sps + [1, 0, 4] + pps) == nil) // length size 3
        #expect(AVCDecoderConfiguration(parsing: [1, 0, 0, 0, 0xFF, 0xE1, 0xFF, 0xFF]) == nil)
        #expect(H264.hasSlice([0, 0, 0, 2, 0x41, 0], extradata: record))
        #expect(!H264.hasSlice([0, 0, 0, 2, 0x06, 0], extradata: record))
        #expect(H264.hasSlice([0, 0, 0, 1, 0x65, 0], extradata: []))
    }

    @Test("sprop-parameter-sets: base64 with or without padding; garbage left out")
    func sprop() {
        #expect(ParameterSets(sprop: "Z0LAHg==,aM48gA").annexB == [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1E, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80])
        #expect(ParameterSets(sprop: "!!!,,====,").annexB == [])
        #expect(Base64.decode("") == [])
        #expect(Base64.decode("TWFu") == Array("Man".utf8))
        #expect(Base64.decode("TWE") == Array("Ma".utf8))
        #expect(Base64.decode("é") == nil)
    }

    @Test("Parameter sets: one parser for avcC, Annex B, sprop and units in band")
    func parameterSets() {
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC], pps: [UInt8] = [0x68, 0xEE, 0x3C, 0x80]
        let avcC: [UInt8] = [1, 0x64, 0x00, 0x1F, 0xFF, 0xE1, 0, 5] + sps + [1, 0, 4] + pps
        let annexB: [UInt8] = [0, 0, 0, 1] + sps + [0, 0, 1] + pps
        for extradata in [avcC, annexB] {
            let p = ParameterSets(extradata: extradata)
            #expect(p.isComplete && p.profileIDC == 0x64 && p.codecString == "avc1.64001F")
            #expect(p.annexB == [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps)
        }
        #expect(ParameterSets(extradata: []).annexB.isEmpty && ParameterSets(extradata: [1, 2]).profileIDC == nil)
        // In band: a new SPS goes first, one seen again is not kept twice, slices are not sets.
        var p = ParameterSets()
        #expect(!p.note([0x65, 1, 2]) && !p.note([UInt8]()))
        let other: [UInt8] = [0x67, 0x42, 0xC0, 0x1E]
        #expect(p.note(sps) && p.note(other) && p.note(sps) && p.note(pps))
        #expect(p.sps == [sps, other] && p.profileIDC == 0x64)
        for i in 0..<20 { p.note([0x68, UInt8(i)]) }
        #expect(p.pps.count == 8 && p.pps.first == [0x68, 19])
    }
}
