import Testing
import TestSupport
import MediaCore
@testable import Mux

@Suite(.ownThreads, .tags(.fast)) struct SlateTests {
    /// A held picture is a copy with a label in its lower left; the source stays as it was.
    @Test func aLabelledCopyLeavesTheSourceAndMarksItsLowerLeft() throws {
        let source = try Frame(width: 640, height: 360, format: .yuvj420p)
        source.withUnsafeMutableAVFrame { f in
            let (y, ys) = Frame.plane(f, 0)
            for r in 0..<360 { (y! + r * ys).update(repeating: 200, count: 640) }
        }
        let marked = try Slate.labelled(source, text: "HELD: DAMAGED SOURCE")
        #expect(marked !== source)
        let before = source.planeBytes(0, rowBytes: 640, rows: 360)
        let after = marked.planeBytes(0, rowBytes: 640, rows: 360)
        #expect(before.allSatisfy { $0 == 200 })
        // The box (luma 76) with white text sits at the lower left; the top is untouched.
        #expect(after[359 * 640 + 1] == 76)
        #expect(after[0..<(640 * 200)].allSatisfy { $0 == 200 })
        #expect(after[(340 * 640)..<(360 * 640)].contains(235))
    }
}
