/// H.265 (HEVC) bitstream work beside H.264's, for every user of it: the RTSP and WHIP
/// receivers (RFC 7798), the `hvcC` record MP4 and Enhanced RTMP carry, parameter sets, and
/// the `hvc1` codec string HLS and WebCodecs ask for. Bytes from a peer: nothing here traps on them.
public enum H265 {
    /// NAL unit types (ITU-T H.265 Table 7-1) LiveRelay looks at.
    public enum NALType {
        public static let vps: UInt8 = 32
        public static let sps: UInt8 = 33
        public static let pps: UInt8 = 34
        public static let accessUnitDelimiter: UInt8 = 35
        public static let prefixSEI: UInt8 = 39
        /// RFC 7798's aggregation packet, fragmentation unit and PACI (never in a bitstream).
        public static let aggregation: UInt8 = 48
        public static let fragmentation: UInt8 = 49
        public static let paci: UInt8 = 50
    }

    /// The type of a NAL unit from the first byte of its two-byte header.
    @inlinable public static func type(_ header: UInt8) -> UInt8 { (header >> 1) & 0x3F }

    /// Whether a NAL unit of this type is a coded slice (VCL types 0–31).
    @inlinable public static func isSlice(_ type: UInt8) -> Bool { type < 32 }

    /// Whether a slice of this type starts a picture a decoder can begin at (IRAP: BLA, IDR, CRA; 16–23).
    @inlinable public static func isRandomAccess(_ type: UInt8) -> Bool { (16...23).contains(type) }

    /// The general part of an SPS's profile_tier_level (H.265 §7.3.3).
    public struct ProfileTierLevel: Sendable, Equatable {
        public var profileSpace: Int
        public var highTier: Bool
        /// general_profile_idc (1 Main, 2 Main 10, 4 range extensions).
        public var profile: Int
        /// general_profile_compatibility_flag[0…31], flag 0 the highest bit.
        public var compatibility: UInt32
        /// The 48 bits of constraint flags, as 6 bytes.
        public var constraints: [UInt8]
        /// general_level_idc: 30 × the level (93 is 3.1).
        public var level: Int

        /// From a sequence parameter set that starts with its two-byte NAL header; nil when it
        /// is too short to hold it.
        public init?(sps: [UInt8]) {
            // After the header: one byte of ids, then the general part (12 bytes).
            let rbsp = NALUnits.removingEmulationPrevention(sps.dropFirst(2).prefix(40))
            guard rbsp.count >= 13 else { return nil }
            profileSpace = Int(rbsp[1] >> 6)
            highTier = rbsp[1] & 0x20 != 0
            profile = Int(rbsp[1] & 0x1F)
            compatibility = 0
            for k in 2...5 { compatibility = compatibility << 8 | UInt32(rbsp[k]) }
            constraints = Array(rbsp[6...11])
            level = Int(rbsp[12])
        }

        /// `hvc1.P.C.TL.B…` (ISO/IEC 14496-15 Annex E): profile space and profile,
        /// compatibility flags in reverse bit order, tier and level, then the constraint bytes
        /// with trailing zero bytes left out.
        public var codecString: String {
            var trimmed = constraints
            while trimmed.last == 0 { trimmed.removeLast() }
            var s = "hvc1." + ["", "A", "B", "C"][profileSpace & 3] + String(profile)
            s += "." + String(compatibility.bitReversed, radix: 16, uppercase: true)
            s += "." + (highTier ? "H" : "L") + String(level)
            for b in trimmed { s += "." + String(b, radix: 16, uppercase: true) }
            return s
        }

        /// RFC 7798 §7.1's SDP parameters for it (`profile-id`, `tier-flag`, `level-id`), with
        /// `tx-mode=SRST` (one RTP stream), as WebRTC peers expect them.
        public var sdpParameters: [String: String] {
            var p = ["profile-id": String(profile), "tier-flag": highTier ? "1" : "0", "level-id": String(level), "tx-mode": "SRST"]
            if profileSpace != 0 { p["profile-space"] = String(profileSpace) }
            return p
        }
    }

    /// `hvc1.1.6.L93.B0` from a sequence parameter set that starts with its NAL header; nil when
    /// it is too short.
    public static func codecString(sps: [UInt8]) -> String? { ProfileTierLevel(sps: sps)?.codecString }
}

/// What H.264 and H.265 share: Annex B framing and emulation prevention.
public enum NALUnits {
    /// The raw bytes of a NAL unit's payload: every `00 00 03` loses its 03.
    public static func removingEmulationPrevention(_ b: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var zeros = 0
        for byte in b {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }
}

extension UInt32 {
    /// Bit 0 becomes bit 31 and so on.
    var bitReversed: UInt32 {
        var v = self, r: UInt32 = 0
        for _ in 0..<32 { r = r << 1 | (v & 1); v >>= 1 }
        return r
    }
}

/// An `hvcC` record (ISO/IEC 14496-15 HEVCDecoderConfigurationRecord): how MP4 and Enhanced
/// RTMP carry H.265's parameter sets, and the length-prefix size of every NAL unit.
public struct HEVCDecoderConfiguration: Sendable, Equatable {
    /// Bytes of each NAL unit's length prefix (1, 2 or 4).
    public var lengthSize: Int
    /// The parameter sets (and SEI) it carries, each a NAL unit with its header, in record order.
    public var units: [[UInt8]]

    /// Nil unless `b` is a whole record (version 1) with a usable length size.
    public init?(parsing b: [UInt8]) {
        guard b.count >= 23, b[0] == 1 else { return nil }
        lengthSize = Int(b[21] & 3) + 1
        guard lengthSize != 3 else { return nil }
        units = []
        var i = 23
        for _ in 0..<Int(b[22]) {
            guard i + 3 <= b.count else { return nil }
            let count = Int(b[i + 1]) << 8 | Int(b[i + 2])
            i += 3
            for _ in 0..<count {
                guard i + 2 <= b.count else { return nil }
                let n = Int(b[i]) << 8 | Int(b[i + 1])
                i += 2
                guard n > 0, n <= b.count - i else { return nil }
                units.append(Array(b[i..<(i + n)]))
                i += n
            }
        }
    }
}
