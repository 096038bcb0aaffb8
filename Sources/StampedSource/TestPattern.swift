internal import CFFmpeg
public import MediaCore

/// Draws the test source's moving picture: sliding colour bars, a box that travels across the
/// picture, and the stamp barcode in the top band.
public struct TestPattern: Sendable {
    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// A new YUV420P frame for `stamp`, with `pts` in `timeBase`.
    public func render(_ stamp: Stamp, pts: Int64, timeBase: TimeBase) throws(FFmpegError) -> Frame {
        let frame = try Frame(width: width, height: height, format: .yuv420p, pts: pts, timeBase: timeBase)
        frame.withUnsafeMutableAVFrame { f in
            let (yp, ys) = Frame.plane(f, 0)
            let (up, us) = Frame.plane(f, 1)
            let (vp, vs) = Frame.plane(f, 2)
            guard let yp, let up, let vp else { return }
            let n = Int(stamp.frameNumber)
            let band = StampCodec.bandHeight(height: height) & ~1
            // Bars: 8 luma levels sliding left by 4 px a frame.
            let barWidth = max(2, width / 8)
            var row = [UInt8](repeating: 0, count: width)
            for x in 0..<width { row[x] = UInt8(40 + ((x + n * 4) / barWidth % 8) * 25) }
            row.withUnsafeBufferPointer { r in
                for y in band..<height { (yp + y * ys).update(from: r.baseAddress!, count: width) }
            }
            let cw = width / 2
            var urow = [UInt8](repeating: 128, count: cw), vrow = [UInt8](repeating: 128, count: cw)
            for x in 0..<cw {
                let bar = (2 * x + n * 4) / barWidth % 8
                urow[x] = UInt8(64 + bar * 16)
                vrow[x] = UInt8(192 - bar * 16)
            }
            for y in 0..<(height / 2) {
                if y < band / 2 {
                    (up + y * us).update(repeating: 128, count: cw)
                    (vp + y * vs).update(repeating: 128, count: cw)
                } else {
                    urow.withUnsafeBufferPointer { (up + y * us).update(from: $0.baseAddress!, count: cw) }
                    vrow.withUnsafeBufferPointer { (vp + y * vs).update(from: $0.baseAddress!, count: cw) }
                }
            }
            // A white box bouncing across the lower part.
            let box = max(8, height / 8)
            let span = max(1, width - box)
            let pos = n * 6 % (2 * span)
            let bx = pos < span ? pos : 2 * span - pos
            let by = band + (height - band - box) / 2
            for y in by..<min(height, by + box) { (yp + y * ys + bx).update(repeating: 235, count: box) }
            StampCodec.draw(stamp, luma: yp, stride: ys, width: width, height: height)
        }
        return frame
    }
}
