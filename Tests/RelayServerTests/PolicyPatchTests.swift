import Testing
@testable import RelayServer
import Relay

@Suite struct PolicyPatchTests {
    @Test func appliesKnownKeysAndRejectsTheRest() throws {
        let base = SinkPolicy.preview
        if case .success(let p) = PolicyPatch.apply(["ordering": "presentation", "freshness": "max_age", "max_age_ms": 120], to: base) {
            #expect(p.ordering == .presentation)
            #expect(p.freshness == .maxAge(milliseconds: 120))
        } else { Issue.record("rejected a valid patch") }
        for bad: [String: Any] in [["ordering": "fast"], ["freshness": "some"], ["depth": 0], ["colour": "red"]] {
            if case .success = PolicyPatch.apply(bad, to: base) { Issue.record("accepted \(bad)") }
        }
    }

    /// `clean` holds pictures: a preview or frame subscription takes it, a packet output is
    /// told why not (409).
    @Test func cleanIsForPictureOutputsOnly() {
        guard case .success(let p) = PolicyPatch.apply(["freshness": "clean"], to: .preview, pictures: true) else {
            Issue.record("a preview refused clean"); return
        }
        #expect(p.freshness == .clean)
        guard case .failure(let e) = PolicyPatch.apply(["freshness": "clean"], to: .preview, pictures: false) else {
            Issue.record("a packet output took clean"); return
        }
        #expect(e.conflict && e.message.contains("clean"))
    }

    @Test func opsPageEscapesNames() {
        #expect(OpsPage.escape("<script>\"x\"&") == "&lt;script&gt;&quot;x&quot;&amp;")
    }
}
