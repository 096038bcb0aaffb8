import Testing
import TestSupport
@testable import RelayServer
import Relay
import Foundation

@Suite(.ownThreads, .tags(.fast)) struct PolicyPatchTests {
    @Test func appliesKnownKeysAndRejectsTheRest() throws {
        let base = SinkPolicy.preview
        guard case .success(let body) = PolicyPatch.body(Data(#"{"ordering":"presentation","freshness":"max_age","max_age_ms":120}"#.utf8)),
              case .success(let p) = PolicyPatch.apply(body, to: base) else { Issue.record("rejected a valid patch"); return }
        #expect(p.ordering == .presentation)
        #expect(p.freshness == .maxAge(milliseconds: 120))
        // Each refused with a one-line reason that names the key.
        let bad = [#"{"ordering":"fast"}"#: "ordering", #"{"freshness":"some"}"#: "freshness", #"{"depth":0}"#: "depth",
                   #"{"colour":"red"}"#: "colour", #"{"depth":"deep"}"#: "depth", #"{"max_age_ms":1e400}"#: "max_age_ms|JSON",
                   #"[1,2]"#: "JSON", "nonsense": "JSON", #"{"depth":99999999999999999999}"#: "depth"]
        for (text, named) in bad {
            switch PolicyPatch.body(Data(text.utf8)) {
            case .failure(let e): #expect(named.split(separator: "|").contains { e.message.contains($0) }, "\(text): \(e.message)")
            case .success(let b):
                guard case .failure(let e) = PolicyPatch.apply(b, to: base) else { Issue.record("accepted \(text)"); continue }
                #expect(e.message.contains(named), "\(text): \(e.message)")
            }
        }
    }

    /// `clean` holds pictures: a preview or frame subscription takes it, a packet output is
    /// told why not (409).
    @Test func cleanIsForPictureOutputsOnly() {
        guard case .success(let p) = PolicyPatch.apply(.init(freshness: "clean"), to: .preview, pictures: true) else {
            Issue.record("a preview refused clean"); return
        }
        #expect(p.freshness == .clean)
        guard case .failure(let e) = PolicyPatch.apply(.init(freshness: "clean"), to: .preview, pictures: false) else {
            Issue.record("a packet output took clean"); return
        }
        #expect(e.conflict && e.message.contains("clean"))
    }

    @Test func opsPageEscapesNames() {
        #expect(OpsPage.escape("<script>\"x\"&") == "&lt;script&gt;&quot;x&quot;&amp;")
    }
}
