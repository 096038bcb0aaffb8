import Testing
import Foundation
import Logging
@testable import Relay
import TestSupport
import Demux
import Decode

/// The API's stream bodies: JSON decoded into `ConfigValue`, read by the stream section's parser.
@Suite(.ownThreads, .tags(.fast)) struct StreamBodyTests {
    func engine(_ yaml: String = "streams:\n  a: {source: \"testsrc://\"}") throws -> RelayEngine {
        RelayEngine(configuration: try Configuration.parse(yaml, sources: TestSources.opener), sources: TestSources.opener, logger: Logger(label: "test"))
    }

    func body(_ json: String) throws -> [String: ConfigValue] {
        try JSONDecoder().decode([String: ConfigValue].self, from: Data(json.utf8))
    }

    @Test func aBodyIsReadKeyForKeyAsTheFileIs() throws {
        let s = try engine().parseStream(name: "cam", body: body("""
        {"source": "testsrc://?fps=25", "title": "Gate", "keywords": ["a", "b"], "measure": true,
         "decode_threads": 3, "read_timeout": "200ms", "hls": {"variant": "fmp4", "segment_duration": 1.5},
         "preview": false}
        """))
        #expect(s.name == "cam" && s.source == "testsrc://?fps=25" && s.title == "Gate" && s.keywords == ["a", "b"])
        #expect(s.measure && s.decoderOptions.sliceThreads == 3 && s.sourceOptions.readTimeout == 0.2)
        #expect(s.hls?.variant == .fmp4 && s.hls?.segmentDuration == 1.5)
        #expect(s.preview == nil)
    }

    @Test func aBadBodyNamesItsKey() throws {
        let e = try engine()
        let cases: [(String, String)] = [
            (#"{"source": "testsrc://", "hls": {"variant": "dash"}}"#, "request: streams.cam.hls.variant: expected"),
            (#"{"source": "testsrc://", "colour": 1}"#, "request: streams.cam.colour: unknown key"),
            (#"{"title": "x"}"#, "request: streams.cam.source: missing"),
            (#"{"source": "testsrc://", "decode_threads": 1e300}"#, "request: streams.cam.decode_threads: expected a number from 1.0 to 16.0"),
            (#"{"source": "testsrc://", "decode_threads": 99999999999999999999999}"#, "streams.cam.decode_threads"),
            (#"{"source": "testsrc://", "hls": null}"#, "streams.cam.hls"),
            (#"{"source": ["testsrc://"]}"#, "streams.cam.source: expected a single value"),
        ]
        for (json, expected) in cases {
            let error = #expect(throws: ConfigError.self, "\(json)") { try e.parseStream(name: "cam", body: try body(json)) }
            #expect(error?.description.contains(expected) == true, "\(json) → \(error.map { "\($0)" } ?? "no error")")
        }
        // A name the URL could not carry is refused before anything else.
        #expect(throws: ConfigError.self) { try e.parseStream(name: "a/b", body: try body(#"{"source": "testsrc://"}"#)) }
    }

    @Test func aPublishStreamIsCheckedAgainstTheServersIngest() throws {
        // Beyond loopback without any key, a publish stream would let anyone in.
        let e = try engine("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\", publish_key: k}\nstreams:\n  a: {source: \"testsrc://\"}")
        let s = try e.parseStream(name: "p", body: try body(#"{"source": "publish"}"#))
        #expect(s.source == "publish://p")
        let open = try engine("ingest:\n  rtmp: {listen: \"0.0.0.0:1935\"}\nstreams:\n  a: {source: publish, publish_key: abcdefghij}")
        #expect(throws: ConfigError.self) { try open.parseStream(name: "p", body: try body(#"{"source": "publish"}"#)) }
    }
}
