import Testing
import Wire

@Suite("H.265 bitstream", .tags(.fast))
struct H265Tests {
    // libx265's parameter sets for 320x180 Main (ffmpeg -f lavfi -i testsrc … -c:v libx265 -f hevc).
    static let vps: [UInt8] = [0x40, 0x01, 0x0C, 0x01, 0xFF, 0xFF, 0x01, 0x60, 0, 0, 3, 0, 0x90, 0, 0, 3, 0, 0, 3, 0, 0x3C, 0x95, 0x98, 0x09]
    static let sps: [UInt8] = [0x42, 0x01, 0x01, 0x01, 0x60, 0, 0, 3, 0, 0x90, 0, 0, 3, 0, 0, 3, 0, 0x3C, 0xA0, 0x0A, 0x08, 0x0B, 0x9F, 0x79, 0x65, 0x66, 0x92, 0x4C, 0xAF, 0x01, 0x68, 0x08]
    static let pps: [UInt8] = [0x44, 0x01, 0xC1, 0x72, 0xB4, 0x62, 0x40]

    @Test("hvc1 codec strings: profile, reversed compatibility flags, tier and level, constraint bytes without trailing zeros")
    func codecStrings() {
        // Emulation prevention bytes (00 00 03) inside profile_tier_level are taken out first.
        #expect(H265.codecString(sps: Self.sps) == "hvc1.1.6.L60.90")
        // Main 10, high tier, level 5.1, profile space 1; two constraint bytes.
        let main10: [UInt8] = [0x42, 0x01, 0x01, 0x62, 0x20, 0, 0, 0, 0xB0, 0x04, 0, 0, 0, 0, 0x99]
        #expect(H265.codecString(sps: main10) == "hvc1.A2.4.H153.B0.4")
        #expect(H265.codecString(sps: Array(Self.sps.prefix(10))) == nil, "too short for profile_tier_level")
        #expect(H265.codecString(sps: []) == nil)
        #expect(NALUnits.removingEmulationPrevention([0, 0, 3, 1, 0, 0, 3, 0, 0, 3]) == [0, 0, 1, 0, 0, 0, 0])
    }

    /// An `hvcC` record holding the three sets, each in its own array.
    static func hvcC(lengthSize: Int = 4, units: [[UInt8]] = [vps, sps, pps]) -> [UInt8] {
        var b: [UInt8] = [1] + Array(sps[3...14]) + [0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, UInt8(0x0C | (lengthSize - 1)), UInt8(units.count)]
        for u in units {
            b += [0x80 | (u[0] >> 1 & 0x3F), 0, 1, UInt8(u.count >> 8), UInt8(u.count & 0xFF)] + u
        }
        return b
    }

    @Test("Parameter sets from hvcC, Annex B, RFC 7798's sprop-vps/sps/pps and in band; never mixed up with H.264's")
    func parameterSets() {
        let annexB = [0, 0, 0, 1] + Self.vps + [0, 0, 0, 1] + Self.sps + [0, 0, 0, 1] + Self.pps
        let record = HEVCDecoderConfiguration(parsing: Self.hvcC())
        #expect(record?.lengthSize == 4 && record?.units == [Self.vps, Self.sps, Self.pps])
        #expect(ParameterSets(extradata: Self.hvcC(), syntax: .h265).annexB == annexB)
        #expect(ParameterSets(extradata: annexB, syntax: .h265).annexB == annexB)
        #expect(ParameterSets(extradata: Self.hvcC(), syntax: .h265).codecString == "hvc1.1.6.L60.90")
        #expect(ParameterSets(extradata: Self.hvcC(), syntax: .h265).profileIDC == nil, "profile_idc is H.264's")
        // An hvcC record starts with 1, as an avcC does: read as H.264 it is not an H.265 set.
        #expect(ParameterSets(extradata: Self.hvcC(), syntax: .h264).codecString?.hasPrefix("hvc1") != true)
        let fmtp = ["sprop-vps": Base64.encode(Self.vps), "sprop-sps": Base64.encode(Self.sps), "sprop-pps": Base64.encode(Self.pps)]
        #expect(ParameterSets(fmtp: fmtp, syntax: .h265).annexB == annexB)
        var noVPS = fmtp
        noVPS["sprop-vps"] = nil
        #expect(ParameterSets(fmtp: noVPS, syntax: .h265).annexB.isEmpty, "no decoder starts without a VPS")
        #expect(!ParameterSets(fmtp: noVPS, syntax: .h265).isComplete)
        var inBand = ParameterSets(syntax: .h265)
        let taken = [Self.vps, Self.sps, Self.pps, [0x26, 0x01, 0xAF]].map { inBand.note($0) }
        #expect(taken == [true, true, true, false], "an IDR slice is no parameter set")
        #expect(inBand.annexB == annexB)
        #expect(ParameterSets.Syntax(codecName: "hevc") == .h265 && ParameterSets.Syntax(codecName: "vp8") == nil)
    }

    @Test("Malformed hvcC records are refused, not trapped on")
    func malformedRecords() {
        let good = Self.hvcC()
        #expect(HEVCDecoderConfiguration(parsing: Array(good.prefix(22))) == nil)
        #expect(HEVCDecoderConfiguration(parsing: Self.hvcC(lengthSize: 3)) == nil)
        for cut in stride(from: 24, to: good.count, by: 3) {
            #expect(HEVCDecoderConfiguration(parsing: Array(good.prefix(cut))) == nil, "cut at \(cut)")
        }
        var lying = good
        lying[27] = 0xFF // the first unit's length, past the end
        #expect(HEVCDecoderConfiguration(parsing: lying) == nil)
        #expect(ParameterSets(extradata: lying, syntax: .h265).annexB.isEmpty)
    }
}
