/// AMF0, as RTMP commands carry it (connect, createStream, publish, onStatus, metadata).
package enum AMF0: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    case object([(String, AMF0)])
    case null
    case undefined
    case ecmaArray([(String, AMF0)])
    case strictArray([AMF0])
    case date(Double)

    package static func == (a: AMF0, b: AMF0) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): x == y
        case (.boolean(let x), .boolean(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.null, .null), (.undefined, .undefined): true
        case (.object(let x), .object(let y)), (.ecmaArray(let x), .ecmaArray(let y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.strictArray(let x), .strictArray(let y)): x == y
        case (.date(let x), .date(let y)): x == y
        default: false
        }
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }
    subscript(key: String) -> AMF0? {
        switch self {
        case .object(let p), .ecmaArray(let p): p.first { $0.0 == key }?.1
        default: nil
        }
    }

    struct DecodeError: Error {}

    /// Every value in `bytes`, in order; bad or truncated input throws (never traps).
    package static func decodeAll(_ bytes: [UInt8]) throws -> [AMF0] {
        var r = Cursor(bytes: bytes)
        var out: [AMF0] = []
        while r.remaining > 0 { out.append(try r.value(depth: 0)) }
        return out
    }

    struct Cursor {
        let bytes: [UInt8]
        var i = 0
        var remaining: Int { bytes.count - i }

        mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, remaining >= n else { throw DecodeError() }
            defer { i += n }
            return bytes[i..<i + n]
        }
        mutating func u8() throws -> UInt8 { try take(1).first! }
        mutating func u16() throws -> Int { let b = try take(2); return Int(b[b.startIndex]) << 8 | Int(b[b.startIndex + 1]) }
        mutating func u32() throws -> Int { let b = try take(4); return b.reduce(0) { $0 << 8 | Int($1) } }
        mutating func double() throws -> Double { Double(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
        mutating func utf8(_ n: Int) throws -> String { String(decoding: try take(n), as: UTF8.self) }

        mutating func pairs(depth: Int) throws -> [(String, AMF0)] {
            var p: [(String, AMF0)] = []
            while true {
                let n = try u16()
                if n == 0 {
                    if remaining == 0 { return p }                       // tolerate a missing end marker
                    guard try u8() == 9 else { throw DecodeError() }
                    return p
                }
                let k = try utf8(n)
                p.append((k, try value(depth: depth + 1)))
                guard p.count <= 4096 else { throw DecodeError() }
            }
        }

        mutating func value(depth: Int) throws -> AMF0 {
            guard depth < 32 else { throw DecodeError() }
            switch try u8() {
            case 0x00: return .number(try double())
            case 0x01: return .boolean(try u8() != 0)
            case 0x02: return .string(try utf8(try u16()))
            case 0x03: return .object(try pairs(depth: depth))
            case 0x05: return .null
            case 0x06: return .undefined
            case 0x08: _ = try u32(); return .ecmaArray(try pairs(depth: depth))
            case 0x0A:
                let n = try u32()
                guard n <= remaining else { throw DecodeError() }
                var a: [AMF0] = []
                for _ in 0..<n { a.append(try value(depth: depth + 1)) }
                return .strictArray(a)
            case 0x0B: let d = try double(); _ = try u16(); return .date(d)
            case 0x0C: return .string(try utf8(try u32()))
            default: throw DecodeError()
            }
        }
    }

    func encode(into out: inout [UInt8]) {
        func str(_ s: String) { let u = Array(s.utf8.prefix(65535)); out += [UInt8(u.count >> 8), UInt8(u.count & 0xFF)]; out += u }
        func pairs(_ p: [(String, AMF0)]) { for (k, v) in p { str(k); v.encode(into: &out) }; out += [0, 0, 9] }
        switch self {
        case .number(let d): out.append(0); out += withUnsafeBytes(of: d.bitPattern.bigEndian, Array.init)
        case .boolean(let b): out += [1, b ? 1 : 0]
        case .string(let s): out.append(2); str(s)
        case .object(let p): out.append(3); pairs(p)
        case .null: out.append(5)
        case .undefined: out.append(6)
        case .ecmaArray(let p): out.append(8); out += withUnsafeBytes(of: UInt32(p.count).bigEndian, Array.init); pairs(p)
        case .strictArray(let a): out.append(0x0A); out += withUnsafeBytes(of: UInt32(a.count).bigEndian, Array.init); for v in a { v.encode(into: &out) }
        case .date(let d): out.append(0x0B); out += withUnsafeBytes(of: d.bitPattern.bigEndian, Array.init); out += [0, 0]
        }
    }

    package static func encode(_ values: [AMF0]) -> [UInt8] {
        var out: [UInt8] = []
        for v in values { v.encode(into: &out) }
        return out
    }
}
