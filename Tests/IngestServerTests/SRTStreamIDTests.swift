import Testing
@testable import IngestServer

/// SRT callers name their stream in `streamid` three ways (SRT's access-control syntax,
/// MediaMTX's, a plain name); anything else is refused, and a password never reaches a log.
@Suite(.tags(.fast)) struct SRTStreamIDTests {
    @Test func theThreeFormsNameTheStream() {
        #expect(SRTStreamID("#!::r=cam1,m=publish") == SRTStreamID(name: "cam1", mode: .publish))
        #expect(SRTStreamID("#!::m=publish,r=live/cam1,u=ops,s=pw") == SRTStreamID(name: "cam1", mode: .publish, user: "ops", password: "pw"))
        #expect(SRTStreamID("#!::r=cam1")?.mode == .request)
        // The `#` of a URI passed on undecoded (ffmpeg 5.1 sends `%23` as it was written).
        #expect(SRTStreamID("%23!::r=cam1,m=request,u=ops,s=pw") == SRTStreamID(name: "cam1", mode: .request, user: "ops", password: "pw"))
        #expect(SRTStreamID("#!::r=cam1,m=bidirectional")?.mode == .other)
        #expect(SRTStreamID("publish:cam2") == SRTStreamID(name: "cam2", mode: .publish))
        #expect(SRTStreamID("publish:cam2:ops:pw") == SRTStreamID(name: "cam2", mode: .publish, user: "ops", password: "pw"))
        #expect(SRTStreamID("read:cam2")?.mode == .request)
        #expect(SRTStreamID("cam3") == SRTStreamID(name: "cam3", mode: .publish))
    }

    @Test func malformedOrHostileIDsAreRefused() {
        for raw in ["", "#!::", "#!::m=publish", "#!::r", "#!::r=a b,m=publish", "publish:", "publish:a:b", "play:cam1",
                    "cam 1", "../etc", "cam1\n", String(repeating: "a", count: 65), String(repeating: "#", count: 600)] {
            #expect(SRTStreamID(raw) == nil, "\(raw)")
        }
    }

    @Test func aPasswordNeverReachesTheLog() {
        #expect(!SRTStreamID.withoutSecret("#!::r=cam1,m=publish,u=ops,s=hunter22").contains("hunter22"))
        #expect(!SRTStreamID.withoutSecret("publish:cam1:ops:hunter22").contains("hunter22"))
        #expect(SRTStreamID.withoutSecret("bad\nline") == "bad?line")
        // Nor from an ID that does not parse (an unknown mode, a name with a space, a stray field).
        for raw in ["#!::r=a b,m=request,u=ops,s=hunter22", "%23!::r=cam1,s=hunter22,x", "read:a b:ops:hunter22", "play:cam1:ops:hunter22:x"] {
            #expect(SRTStreamID(raw) == nil, "\(raw)")
            #expect(!SRTStreamID.withoutSecret(raw).contains("hunter22"), "\(raw)")
        }
    }
}
