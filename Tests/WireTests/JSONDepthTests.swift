import Testing
import Wire

@Suite(.tags(.fast)) struct JSONDepthTests {
    @Test func countsNestingOutsideStrings() {
        #expect(JSONDepth.deepest(Array(#"{"keys":[{"kty":"EC","x":"[[[{{{"}]}"#.utf8), limit: 16) == 3)
        #expect(JSONDepth.deepest(Array(#"{"a":"\"[[[["}"#.utf8), limit: 16) == 1)
        #expect(JSONDepth.deepest(Array("".utf8), limit: 16) == 0)
        #expect(JSONDepth.deepest(Array("]]]][[".utf8), limit: 16) == 2)
        // Deep documents stop the scan just past the limit.
        #expect(JSONDepth.deepest([UInt8](repeating: 0x5B, count: 100_000), limit: 16) == 17)
    }
}
