/// Base64 (RFC 4648, standard alphabet), padding optional: SDP parameter sets, Basic credentials.
public enum Base64 {
    /// Nil on any character outside the alphabet.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case 0x41...0x5A: v = c - 0x41
            case 0x61...0x7A: v = c - 0x61 + 26
            case 0x30...0x39: v = c - 0x30 + 52
            case 0x2B: v = 62
            case 0x2F: v = 63
            case 0x3D: continue
            default: return nil
            }
            acc = (acc << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        return out
    }

    /// With padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let b = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((b.count + 2) / 3 * 4)
        var i = 0
        while i < b.count {
            let n = min(3, b.count - i)
            let v = UInt32(b[i]) << 16 | (n > 1 ? UInt32(b[i + 1]) << 8 : 0) | (n > 2 ? UInt32(b[i + 2]) : 0)
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : 0x3D)
            out.append(n > 2 ? alphabet[Int(v & 63)] : 0x3D)
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Lowercase hex: digests, signatures, keys in logs.
public enum Hex {
    /// `uppercase` and `separator` for the forms others expect: a DTLS fingerprint is
    /// `AB:CD:…`, an H.264 codec string's profile `avc1.64001F`.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false, separator: String = "") -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        let sep = Array(separator.utf8)
        var out: [UInt8] = []
        for b in bytes {
            if !out.isEmpty { out += sep }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil on an odd length or a character that is not a hex digit.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        func digit(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i + 1 < u.count {
            guard let h = digit(u[i]), let l = digit(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }
}
