import Testing
@testable import Wire

/// MP4 boxes and Range headers from anything: sizes that lie, counts that run past their box,
/// truncation; nil or the whole body, never a trap.
@Suite(.tags(.fast)) struct MP4Tests {
    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + body.count)) + Array(type.utf8) + body
    }
    static func be32(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> UInt32($0)) } }
    static func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(truncatingIfNeeded: v)) }

    /// A moof of one track: tfhd (default duration 3000), tfdt v1, trun of `count` samples with
    /// per-sample sizes and the first sample's flags.
    static func moof(track: UInt32 = 1, time: UInt64, count: UInt32, firstFlags: UInt32 = 0x0200_0000) -> [UInt8] {
        let tfhd = box("tfhd", be32(0x08) + be32(track) + be32(3000))
        let tfdt = box("tfdt", [1, 0, 0, 0] + be64(time))
        var trun = be32(0x0205) + be32(count) + be32(0) + be32(firstFlags)
        for _ in 0..<count { trun += be32(100) }
        return box("moof", box("mfhd", be32(0) + be32(1)) + box("traf", tfhd + tfdt + box("trun", trun)))
    }

    @Test func aFragmentsTimesDurationAndSyncAreRead() throws {
        let m = Self.moof(time: 90_000, count: 30)
        let runs = try #require(MP4.fragment(moof: m, tracks: []))
        #expect(runs.count == 1)
        #expect(runs[0].decodeTime == 90_000 && runs[0].samples == 30 && runs[0].duration == 90_000 && runs[0].startsWithSync)
        // A first sample flagged non-sync.
        #expect(MP4.fragment(moof: Self.moof(time: 0, count: 2, firstFlags: 0x0101_0000), tracks: [])?.first?.startsWithSync == false)
    }

    @Test func decodeTimesAreMovedInPlace() throws {
        var m = Self.moof(time: 90_000, count: 3)
        #expect(MP4.settingDecodeTimes(moof: &m, tracks: []) { _, t in t - 90_000 + 5 })
        #expect(MP4.fragment(moof: m, tracks: [])?.first?.decodeTime == 5)
    }

    @Test func sizesAndCountsThatLieGiveNil() {
        // A sample count far past the box.
        var m = Self.moof(time: 0, count: 2)
        let trun = m.count - (8 + 16 + 2 * 4) // the trun box's start
        m.replaceSubrange((trun + 12)..<(trun + 16), with: Self.be32(0xFFFF_FFFF))
        #expect(MP4.fragment(moof: m, tracks: []) == nil)
        // A box whose size runs past its container, a size below its header, a 64-bit size too big.
        #expect(MP4.head(Self.be32(100) + Array("moof".utf8), at: 0, end: 8) == nil)
        #expect(MP4.head(Self.be32(3) + Array("moof".utf8), at: 0, end: 8) == nil)
        #expect(MP4.head(Self.be32(1) + Array("mdat".utf8) + Self.be64(.max), at: 0, end: 1 << 40) == nil)
        #expect(MP4.head([0, 0], at: 0, end: 2) == nil)
        // Size 0: to the end of the container.
        #expect(MP4.head(Self.be32(0) + Array("mdat".utf8) + [1, 2, 3], at: 0, end: 11)?.size == 11)
        // Every truncation of a good fragment, and every single-byte change, reads or gives nil.
        let good = Self.moof(time: 1234, count: 4)
        for n in 0..<good.count { _ = MP4.fragment(moof: Array(good.prefix(n)), tracks: []) }
        for i in 0..<good.count {
            for v: UInt8 in [0, 1, 0x7F, 0xFF] {
                var b = good
                b[i] = v
                _ = MP4.fragment(moof: b, tracks: [])
                _ = MP4.tracks(moov: b)
            }
        }
    }

    @Test func rangeHeaders() {
        #expect(ByteRange.parse("bytes=0-99", length: 1000) == .part(0..<100))
        #expect(ByteRange.parse("bytes=900-", length: 1000) == .part(900..<1000))
        #expect(ByteRange.parse("bytes=-100", length: 1000) == .part(900..<1000))
        #expect(ByteRange.parse("bytes=-5000", length: 1000) == .part(0..<1000))
        #expect(ByteRange.parse("bytes=0-99999999999999999999999", length: 1000) == .whole)
        #expect(ByteRange.parse("bytes=990-5000", length: 1000) == .part(990..<1000))
        #expect(ByteRange.parse("bytes=1000-", length: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", length: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=5-2", length: 1000) == .whole)
        #expect(ByteRange.parse("bytes=0-1,5-6", length: 1000) == .whole)
        #expect(ByteRange.parse("items=0-1", length: 1000) == .whole)
        #expect(ByteRange.parse("bytes=x-y", length: 1000) == .whole)
        #expect(ByteRange.parse(nil, length: 1000) == .whole)
        #expect(ByteRange.parse(Substring(String(repeating: "9", count: 5000)), length: 1000) == .whole)
    }
}
