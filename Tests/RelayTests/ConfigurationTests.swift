import Testing
import Foundation
import Synchronization
import MediaCore
@testable import Relay
import Demux
import Decode
import TestSupport

@Suite struct ConfigurationTests {
    @Test func parsesTheDocumentedShape() throws {
        let c = try Configuration.parse("""
        server:
          listen: 127.0.0.1:9090
        streams:
          cam1:
            source: rtsp://user:pass@camera.local/stream1
            transport: udp
            hwaccel: none
            decode_threads: 3
            title: Unit 12 bodycam
            preview:
              ordering: arrival
              freshness: max_age
              max_age_ms: 250
              size: 640x360
              fps: 15
        """, sources: TestSources.opener)
        #expect(c.listenPort == 9090)
        let s = try #require(c.streams.first)
        #expect(s.sourceOptions.transport == .udp)
        #expect(s.sourceOptions.reorderWait == 0.05 && s.sourceOptions.reorderQueueSize == nil)
        #expect(s.preview?.policy.freshness == .maxAge(milliseconds: 250))
        #expect(s.preview?.width == 640)
        #expect(s.decoderOptions.sliceThreads == 3)
        let d = try Configuration.parse("streams:\n  a:\n    source: testsrc://", sources: TestSources.opener)
        #expect(d.streams.first?.decoderOptions.sliceThreads == 2)
    }

    /// Every example in configs/ is valid, with the sinks it shows.
    @Test func theExampleConfigurationsParse() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("configs")
        for name in ["demo.yaml", "bodycam-ops.yaml", "hls-republish.yaml"] {
            _ = try Configuration.load(file: dir.appendingPathComponent(name).path, sources: TestSources.opener)
        }
        let republish = try Configuration.load(file: dir.appendingPathComponent("hls-republish.yaml").path, sources: TestSources.opener)
        let event = try #require(republish.streams.first { $0.name == "event" })
        #expect(event.hls?.variant == .lowLatency && event.hls?.partDuration == 0.2 && event.record?.segmentDuration == 3600)
        #expect(event.forward.count == 1 && event.sourceOptions.listen && event.preview == nil)
    }

    @Test(arguments: [
        ("streams:\n  cam1:\n    source: testsrc://\n    preview:\n      ordering: fast", "streams.cam1.preview.ordering: expected presentation or arrival, got \"fast\""),
        ("streams:\n  cam1:\n    source: testsrc://\n    trasnport: udp", "streams.cam1.trasnport: unknown key"),
        ("streams:\n  cam1:\n    transport: udp", "streams.cam1.source: missing"),
        ("server:\n  listen: nowhere\nstreams:\n  a:\n    source: testsrc://", "server.listen: expected HOST:PORT"),
        ("streams: [", "not valid YAML"),
        ("streams:\n  c:\n    source: testsrc://\n    decode_threads: 0", "streams.c.decode_threads:"),
        ("streams:\n  cam1:\n    source: gopher://x", "streams.cam1.source: unsupported scheme"),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      variant: dash", "streams.c.hls.variant: expected mpegts, fmp4 or lowLatency, got \"dash\""),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      segment_duration: soon", "streams.c.hls.segment_duration: expected a duration"),
        ("streams:\n  c:\n    source: testsrc://\n    hls:\n      push: ftp://x/", "streams.c.hls.push: expected an http:// or https:// URL"),
        ("streams:\n  c:\n    source: testsrc://\n    record: {}", "streams.c.record.path: missing"),
        ("streams:\n  c:\n    source: testsrc://\n    forward: [rtmp://a/b/KEY, 'ftp://x/y']", "streams.c.forward[1]: expected an rtmp://"),
    ])
    func errorsNameTheKey(yaml: String, expected: String) {
        do {
            _ = try Configuration.parse(yaml, file: "bad.yaml", sources: TestSources.opener)
            Issue.record("accepted")
        } catch {
            #expect(error.description.hasPrefix("bad.yaml: "))
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }
}
