import MediaCore
import Foundation

/// Judges a picture of the stamped source against what the source drew: the stamp names the
/// frame, the pattern is drawn again for it, and the luma below the stamp band is compared.
/// An independent reader's view of "damaged": it needs nothing from the decoder (which flags
/// almost none of the pictures it conceals) or from LiveRelay's own loss detection.
public enum PictureCheck {
    public enum Verdict: Sendable, Equatable {
        /// No stamp could be read (the band itself is damaged, or not the stamped source).
        case unreadable
        case clean(Stamp, psnr: Double)
        case damaged(Stamp, psnr: Double)

        public var isClean: Bool { if case .clean = self { true } else { false } }
        /// The picture's stamp, when it could be read.
        public var stamp: Stamp? {
            switch self {
            case .unreadable: nil
            case .clean(let s, _), .damaged(let s, _): s
            }
        }
    }

    /// Below this luma PSNR (dB) against the redrawn pattern a picture counts as damaged. The
    /// source's own H.264 plus a JPEG at quality 75–80 stay above 30 dB; a picture smeared by a
    /// lost packet (bars or box from another frame) falls far below.
    public static let threshold = 24.0

    /// Judges one luma plane of `width`×`height`.
    public static func judge(luma: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int) -> Verdict {
        guard let stamp = StampCodec.read(luma: luma, stride: stride, width: width, height: height) else { return .unreadable }
        guard let expected = try? TestPattern(width: width, height: height).render(stamp, pts: 0, timeBase: .milliseconds) else { return .unreadable }
        let band = StampCodec.bandHeight(height: height) & ~1
        let sse: Double = expected.withLumaPlane { e, es in
            var total = 0.0
            for y in band..<height {
                let a = luma + y * stride, b = e + y * es
                var row = 0
                for x in 0..<width { let d = Int(a[x]) - Int(b[x]); row += d * d }
                total += Double(row)
            }
            return total
        } ?? .infinity
        let count = Double(max(1, (height - band) * width))
        let mse = sse / count
        let psnr = mse <= 0 ? 99 : 10 * log10(255 * 255 / mse)
        return psnr >= threshold ? .clean(stamp, psnr: psnr) : .damaged(stamp, psnr: psnr)
    }
}
