import Testing
import MediaCore

@Suite struct RedactorTests {
    @Test func passwordIsMaskedUserKept() {
        let r = Redactor.redact("rtsp://admin:s3cretPW@camera.local:554/stream1")
        #expect(r == "rtsp://admin:***@camera.local:554/stream1")
        #expect(!r.contains("s3cretPW"))
    }

    @Test func credentialQueryValuesAreMasked() {
        let r = Redactor.redact("srt://host:9000?mode=caller&passphrase=verysecret1&latency=50")
        #expect(r == "srt://host:9000?mode=caller&passphrase=***&latency=50")
        let k = Redactor.redact("rtmp://host/app/stream?key=abcdef123&x=1")
        #expect(!k.contains("abcdef123"))
    }

    @Test func streamKeyHiddenOnRequest() {
        let r = Redactor.redact("rtmp://live.example.com/app/STREAMKEY-9f8e7d", hideStreamKey: true)
        #expect(r == "rtmp://live.example.com/app/***")
    }

    @Test func urlsWithoutSecretsAreUntouched() {
        for u in ["rtsp://127.0.0.1:8554/test", "udp://0.0.0.0:5000?pkt_size=1316", "/tmp/file.mp4", "testsrc://?size=640x360"] {
            #expect(Redactor.redact(u) == u)
        }
    }

    @Test func scrubMasksURLsAndRememberedSecretsInFreeText() {
        let text = "Connection to rtsp://bob:hunter2pw@10.0.0.1/x failed"
        #expect(Redactor.scrub(text) == "Connection to rtsp://bob:***@10.0.0.1/x failed")
        // Having seen it once, the secret is masked wherever it appears later.
        #expect(!Redactor.scrub("authorization with hunter2pw rejected").contains("hunter2pw"))
    }
}

@Suite struct TimeBaseTests {
    @Test func rescalesAndConverts() {
        #expect(TimeBase(1, 30).rescale(30, to: .mpegTS) == 90_000)
        #expect(TimeBase(1, 1000).seconds(1500) == 1.5)
        #expect(TimeBase(1, 90_000).rescale(45_000, to: .milliseconds) == 500)
    }

    @Test func ffmpegErrorsDescribeThemselves() {
        let e = FFmpegError(code: FFmpegError.invalidData, operation: "av_read_frame")
        #expect(e.isInvalidData)
        #expect(e.description.hasPrefix("av_read_frame: "))
        #expect(e.message.lowercased().contains("invalid data"))
    }
}
