public import MediaCore
internal import CFFmpeg

/// The picture a preview shows when its source has no signal: dark, a red band, and lines of
/// text (the reason, since when) drawn with a built-in 5×7 pixel font, so it needs no font
/// library and no filter graph.
public enum Slate {
    /// One line of text: `scale` is the size of one font pixel in picture pixels (0: fit the width).
    public struct Line: Sendable {
        public var text: String
        public var scale: Int
        public var bright: Bool
        public init(_ text: String, scale: Int = 0, bright: Bool = true) {
            self.text = text
            self.scale = scale
            self.bright = bright
        }
    }

    /// A YUVJ420P picture with `lines` centred one under the other.
    public static func render(width: Int, height: Int, lines: [Line]) throws(FFmpegError) -> Frame {
        let w = max(64, width & ~1), h = max(64, height & ~1)
        let frame = try Frame(width: w, height: h, format: .yuvj420p)
        frame.withUnsafeMutableAVFrame { f in
            let (y, ys) = Frame.plane(f, 0), (u, us) = Frame.plane(f, 1), (v, vs) = Frame.plane(f, 2)
            guard let y, let u, let v else { return }
            for r in 0..<h { (y + r * ys).update(repeating: 24, count: w) }
            for r in 0..<(h / 2) {
                (u + r * us).update(repeating: 128, count: w / 2)
                (v + r * vs).update(repeating: 128, count: w / 2)
            }
            // A red band across the top.
            let band = max(2, h / 24) & ~1
            for r in 0..<band { (y + r * ys).update(repeating: 76, count: w) }
            for r in 0..<(band / 2) {
                (u + r * us).update(repeating: 84, count: w / 2)
                (v + r * vs).update(repeating: 255, count: w / 2)
            }
            // Text: each line as large as fits (or as asked), centred.
            let scales = lines.map { line -> Int in
                let fit = max(1, (w * 9 / 10) / max(1, line.text.count * 6))
                return line.scale > 0 ? min(line.scale, fit) : min(fit, max(1, h / 40))
            }
            let total = zip(lines, scales).reduce(0) { $0 + 10 * $1.1 }
            var top = max(band + 2, (h - total) / 2)
            for (line, scale) in zip(lines, scales) {
                let textWidth = line.text.count * 6 * scale
                draw(line.text, luma: y, stride: ys, width: w, height: h, x: max(0, (w - textWidth) / 2), top: top,
                     scale: scale, level: line.bright ? 235 : 150)
                top += 10 * scale
            }
        }
        return frame
    }

    /// A copy of `source` (planar YUV 4:2:0) with `text` in a red box at its lower left: a
    /// picture shown for longer than it is fresh says so.
    public static func labelled(_ source: Frame, text: String) throws(FFmpegError) -> Frame {
        let out = try Frame(width: source.width, height: source.height, format: source.pixelFormat, pts: source.pts ?? 0,
                            timeBase: source.timeBase, arrivalNanos: source.arrivalNanos, decodedNanos: source.decodedNanos)
        let r = out.withUnsafeMutableAVFrame { dst in source.withUnsafeAVFrame { av_frame_copy(dst, $0) } }
        try ffcheck(r, "av_frame_copy")
        out.withUnsafeMutableAVFrame { f in
            let (y, ys) = Frame.plane(f, 0), (u, us) = Frame.plane(f, 1), (v, vs) = Frame.plane(f, 2)
            guard let y, let u, let v else { return }
            let w = Int(f.pointee.width), h = Int(f.pointee.height)
            let scale = max(1, min(h / 90, w / max(1, text.count * 6 + 2) / 2))
            let boxW = min(w, (text.count * 6 + 2) * scale) & ~1, boxH = min(h, 11 * scale) & ~1
            let x0 = 0, y0 = (h - boxH) & ~1
            for r in y0..<(y0 + boxH) { (y + r * ys + x0).update(repeating: 76, count: boxW) }
            for r in (y0 / 2)..<((y0 + boxH) / 2) {
                (u + r * us + x0 / 2).update(repeating: 84, count: boxW / 2)
                (v + r * vs + x0 / 2).update(repeating: 255, count: boxW / 2)
            }
            draw(text, luma: y, stride: ys, width: w, height: h, x: x0 + scale, top: y0 + 2 * scale, scale: scale, level: 235)
        }
        return out
    }

    /// Draws `text` in the 5×7 font, each dot `scale` pixels square, into a luma plane.
    static func draw(_ text: String, luma y: UnsafeMutablePointer<UInt8>, stride ys: Int, width w: Int, height h: Int,
                     x start: Int, top: Int, scale: Int, level: UInt8) {
        var x = start
        for ch in text.uppercased() {
            let rows = glyphs[ch] ?? glyphs["?"]!
            for (ry, bits) in rows.enumerated() {
                for cx in 0..<5 where bits & (0x10 >> cx) != 0 {
                    let px = x + cx * scale, py = top + ry * scale
                    guard px >= 0, py >= 0, px + scale <= w, py + scale <= h else { continue }
                    for dy in 0..<scale { (y + (py + dy) * ys + px).update(repeating: level, count: scale) }
                }
            }
            x += 6 * scale
        }
    }

    /// Rows of five bits, the leftmost pixel in bit 4.
    static let glyphs: [Character: [UInt8]] = [
        "A": [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        "C": [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        "D": [0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E],
        "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        "F": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        "H": [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "I": [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "J": [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        "L": [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        "N": [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        "Q": [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        "S": [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        "T": [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        "U": [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        "V": [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        "W": [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        "X": [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        "Y": [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        "Z": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        ":": [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
        ".": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        "-": [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
        "/": [0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00],
        "(": [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ")": [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        ",": [0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08],
        "_": [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F],
        "\"": [0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00],
        "'": [0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00],
        "?": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04],
        "=": [0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00],
        "+": [0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00],
        "%": [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        "@": [0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E],
        "#": [0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A],
        "!": [0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04],
        "<": [0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02],
        ">": [0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08],
        "&": [0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D],
        "*": [0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00],
        " ": [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
    ]
}
