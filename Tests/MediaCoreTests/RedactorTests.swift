import Testing
import TestSupport
import MediaCore

@Suite(.ownThreads, .tags(.fast)) struct RedactorTests {
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

    @Test func scrubMasksURLsAndConfiguredSecretsButLearnsNothingFromText() {
        let text = "Connection to rtsp://bob:hunter2pw@10.0.0.1/x failed"
        #expect(Redactor.scrub(text) == "Connection to rtsp://bob:***@10.0.0.1/x failed")
        // What a peer writes is not learnt: its words cannot mask (or probe) other text.
        #expect(Redactor.scrub("authorization with hunter2pw rejected").contains("hunter2pw"))
        // A secret from a configured URL is masked wherever it appears later.
        _ = Redactor.redact("rtsp://ops:c0nfigured-pw@10.0.0.2/x")
        #expect(!Redactor.scrub("authorization with c0nfigured-pw rejected").contains("c0nfigured-pw"))
    }

    /// Regression (found by the url fuzzer): invalid UTF-8 and a CR after an RTMP URL made
    /// Foundation's `contains` on Linux stop the process inside `scrub`.
    @Test func textThatOnceStoppedTheProcessIsRedacted() {
        let text = String(decoding: [114, 116, 109, 112, 58, 47, 47, 91, 58, 58, 49, 93, 58, 49, 57, 51, 53, 47, 97, 112, 112, 47, 75, 69, 89, 63, 165, 204, 216, 127, 15, 228, 254, 226, 13, 85, 21, 245, 74, 217, 69] as [UInt8], as: UTF8.self)
        _ = Redactor.redact("rtsp://u:secret-in-config@h/x")
        let r = Redactor.redact(text)
        #expect(r.hasPrefix("rtmp://[::1]:1935/app/***"))
        #expect(Redactor.scrub(text + " secret-in-config").hasSuffix("***"))
    }

    @Test func rtmpStreamKeysAreHiddenByDefault() {
        #expect(Redactor.redact("rtmp://live.example.com/app/KEY-123456") == "rtmp://live.example.com/app/***")
        #expect(Redactor.redact("rtmps://ingest.example.com:443/app/sk_us-west_abc") == "rtmps://ingest.example.com:443/app/***")
        #expect(Redactor.redact("rtsp://cam.local/stream1") == "rtsp://cam.local/stream1")
    }

    @Test func srtStreamIDWithAHashIsAQueryNotAFragment() {
        let r = Redactor.redact("srt://host:9000?streamid=#!::r=live/cam,u=bob&passphrase=topsecret99&latency=50")
        #expect(!r.contains("topsecret99") && !r.contains("r=live"), "\(r)")
        #expect(r.contains("latency=50"))
    }

    @Test(arguments: ["access_token", "X-Amz-Signature", "client_secret", "jwt", "auth_key", "password2", "credentials", "streamkey", "passphrase", "api-key"])
    func secretQueryKeysAreMatchedAsFamilies(_ name: String) {
        let r = Redactor.redact("https://origin.example/live?\(name)=sensitive-value-42&x=1")
        #expect(!r.contains("sensitive-value-42"), "\(name): \(r)")
    }
}

@Suite(.ownThreads, .tags(.fast)) struct TimeBaseTests {
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
