import MediaCore

/// What the test source writes into each picture: when it was captured and which frame it is.
public struct Stamp: Sendable, Hashable, CustomStringConvertible {
    /// Capture wall-clock time, milliseconds since the Unix epoch.
    public var captureMillis: Int64
    /// Frame counter since the source started (wraps at 2^32).
    public var frameNumber: UInt32

    public init(captureMillis: Int64, frameNumber: UInt32) {
        self.captureMillis = captureMillis
        self.frameNumber = frameNumber
    }

    public var description: String { "#\(frameNumber)@\(captureMillis)" }

    /// Milliseconds from capture to now, on the wall clock (same machine, or synchronised clocks).
    public var ageMilliseconds: Double {
        Double(MonotonicClock.wallMicroseconds() - captureMillis * 1000) / 1000
    }
}

/// A barcode of large luma blocks in the top quarter of a picture, robust to H.264 at modest
/// bit rates and to scaling (positions are proportional to the picture size).
///
/// Layout: a grid of `columns` × `rows` cells across the full width and the top `rows/28` of the
/// height. Row 0 is a fixed sync pattern; the next 96 cells carry 48 bits of capture time, 32
/// bits of frame counter and a CRC-16 of those 80 bits, most significant bit first. A cell is
/// white (235) for 1 and black (16) for 0.
public enum StampCodec {
    public static let columns = 16
    public static let rows = 7
    static let rowDivisor = 28
    static let sync: [Bool] = [true, false, true, false, true, true, false, false, true, true, true, true, false, false, false, false]
    static let high: UInt8 = 235
    static let low: UInt8 = 16

    /// Height in pixels of the band the barcode covers in a picture of `height`.
    public static func bandHeight(height: Int) -> Int { cellRect(0, rows - 1, 1, height).y1 }

    static func cellRect(_ c: Int, _ r: Int, _ width: Int, _ height: Int) -> (x0: Int, x1: Int, y0: Int, y1: Int) {
        (c * width / columns, (c + 1) * width / columns, r * height / rowDivisor, (r + 1) * height / rowDivisor)
    }

    static func bits(of stamp: Stamp) -> [Bool] {
        var payload: [Bool] = []
        payload.reserveCapacity(96)
        let t = UInt64(bitPattern: stamp.captureMillis) & 0xFFFF_FFFF_FFFF
        for i in stride(from: 47, through: 0, by: -1) { payload.append((t >> UInt64(i)) & 1 == 1) }
        for i in stride(from: 31, through: 0, by: -1) { payload.append((stamp.frameNumber >> UInt32(i)) & 1 == 1) }
        let crc = crc16(payload)
        for i in stride(from: 15, through: 0, by: -1) { payload.append((crc >> UInt16(i)) & 1 == 1) }
        return sync + payload
    }

    /// CRC-16/CCITT-FALSE over a bit string.
    static func crc16(_ bits: [Bool]) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for bit in bits {
            let top = (crc & 0x8000) != 0
            crc <<= 1
            if top != bit { crc ^= 0x1021 }
        }
        return crc
    }

    /// Draws the stamp into a luma plane.
    public static func draw(_ stamp: Stamp, luma: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int) {
        let cells = bits(of: stamp)
        for r in 0..<rows {
            for c in 0..<columns {
                let rect = cellRect(c, r, width, height)
                let v = cells[r * columns + c] ? high : low
                for y in rect.y0..<rect.y1 {
                    (luma + y * stride + rect.x0).update(repeating: v, count: rect.x1 - rect.x0)
                }
            }
        }
    }

    /// Reads a stamp from a luma plane, or nil when the picture carries none (or it is damaged).
    public static func read(luma: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int) -> Stamp? {
        guard width >= columns * 4, height >= rowDivisor * 2 else { return nil }
        var cells: [Bool] = []
        cells.reserveCapacity(rows * columns)
        let threshold = (Int(high) + Int(low)) / 2
        for r in 0..<rows {
            for c in 0..<columns {
                let rect = cellRect(c, r, width, height)
                // Sample the middle half of the cell, away from edges that the codec smears.
                let w = rect.x1 - rect.x0, h = rect.y1 - rect.y0
                let x0 = rect.x0 + w / 4, x1 = max(x0 + 1, rect.x1 - w / 4)
                let y0 = rect.y0 + h / 4, y1 = max(y0 + 1, rect.y1 - h / 4)
                var sum = 0
                for y in y0..<y1 {
                    let row = luma + y * stride
                    for x in x0..<x1 { sum += Int(row[x]) }
                }
                cells.append(sum / ((x1 - x0) * (y1 - y0)) > threshold)
            }
        }
        guard Array(cells[0..<columns]) == sync else { return nil }
        let payload = Array(cells[columns...])
        var t: UInt64 = 0
        for b in payload[0..<48] { t = t << 1 | (b ? 1 : 0) }
        var n: UInt32 = 0
        for b in payload[48..<80] { n = n << 1 | (b ? 1 : 0) }
        var crc: UInt16 = 0
        for b in payload[80..<96] { crc = crc << 1 | (b ? 1 : 0) }
        guard crc16(Array(payload[0..<80])) == crc else { return nil }
        return Stamp(captureMillis: Int64(t), frameNumber: n)
    }
}
