import Testing
import TestSupport
import StampedSource
@testable import MediaCore

@Suite(.ownThreads, .tags(.fast)) struct StampTests {
    func plane(_ w: Int, _ h: Int, fill: UInt8 = 100) -> [UInt8] { [UInt8](repeating: fill, count: w * h) }
    func draw(_ s: Stamp, into luma: inout [UInt8], _ w: Int, _ h: Int) {
        luma.withUnsafeMutableBufferPointer { StampCodec.draw(s, luma: $0.baseAddress!, stride: w, width: w, height: h) }
    }
    /// A w×h plane with `s` drawn in it.
    func stamped(_ s: Stamp, _ w: Int, _ h: Int) -> [UInt8] {
        var luma = plane(w, h)
        draw(s, into: &luma, w, h)
        return luma
    }
    func read(_ luma: [UInt8], _ w: Int, _ h: Int) -> Stamp? {
        luma.withUnsafeBufferPointer { StampCodec.read(luma: $0.baseAddress!, stride: w, width: w, height: h) }
    }

    @Test(arguments: [(320, 240), (640, 360), (1280, 720), (1920, 1080), (176, 144)])
    func roundTripAtEverySize(size: (Int, Int)) {
        let (w, h) = size
        var luma = plane(w, h)
        let stamps = [Stamp(captureMillis: 1_790_000_000_123, frameNumber: 0),
                      Stamp(captureMillis: 0xFFFF_FFFF_FFFF, frameNumber: .max),
                      Stamp(captureMillis: 42, frameNumber: 123_456)]
        for s in stamps {
            draw(s, into: &luma, w, h)
            #expect(read(luma, w, h) == s)
        }
    }

    @Test func aPictureWithoutStampReadsNil() {
        let w = 640, h = 360
        var luma = plane(w, h)
        #expect(read(luma, w, h) == nil)
        // Random blocks: the sync row and CRC reject them.
        var rng = SystemRandomNumberGenerator()
        for i in 0..<luma.count { luma[i] = UInt8.random(in: 0...255, using: &rng) }
        #expect(read(luma, w, h) == nil)
    }

    @Test func aFlippedCellIsRejectedNotMisread() {
        let w = 320, h = 240
        var luma = stamped(Stamp(captureMillis: 1_790_000_000_000, frameNumber: 77), w, h)
        // Invert one data cell (row 3, column 5).
        let x0 = 5 * w / 16, x1 = 6 * w / 16, y0 = 3 * h / 28, y1 = 4 * h / 28
        for y in y0..<y1 { for x in x0..<x1 { luma[y * w + x] = luma[y * w + x] > 128 ? 16 : 235 } }
        #expect(read(luma, w, h) == nil)
    }

    @Test func readsThroughModerateNoise() {
        let w = 640, h = 360
        let s = Stamp(captureMillis: 1_790_000_000_999, frameNumber: 9)
        var luma = stamped(s, w, h)
        for i in 0..<luma.count { luma[i] = UInt8(clamping: Int(luma[i]) + Int.random(in: -40...40)) }
        #expect(read(luma, w, h) == s)
    }
}
