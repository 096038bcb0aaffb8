import Testing
import Foundation
import Logging
import Synchronization
import Relay
import TestSupport

/// The engine names no feature: it runs the ones it is given, each stream through each.
@Suite(.ownThreads, .tags(.fast)) struct EngineFeatureTests {
    /// Says what the engine asked of it, in order.
    final class Witness: EngineFeature {
        let said = Mutex<[String]>([])
        func attach(to hub: StreamHub, stream: Configuration.Stream, engine: RelayEngine, logger: Logger) {
            said.withLock { $0.append("attach \(stream.name)") }
        }
        func removed(_ stream: String) { said.withLock { $0.append("removed \(stream)") } }
        func start(engine: RelayEngine) { said.withLock { $0.append("start") } }
        func stopping() { said.withLock { $0.append("stopping") } }
        func drain() async { said.withLock { $0.append("drain") } }
        func stop() async { said.withLock { $0.append("stop") } }
    }

    static let yaml = """
    streams:
      cam: {source: "testsrc://?size=160x96&fps=10", preview: false, hls: {variant: mpegts}, record: {path: /nonexistent/rec}}
    """

    @Test func anEngineRunsTheFeaturesItIsGivenAndNoOthers() async throws {
        let c = try Configuration.parse(Self.yaml, sources: TestSources.opener)
        let witness = Witness()
        let engine = RelayEngine(configuration: c, sources: TestSources.opener, features: [{ _ in witness }], logger: Logger(label: "test"))
        // Configured, but no feature makes them.
        #expect(engine.hls("cam") == nil && engine.recorder("cam") == nil && engine.hooks == nil)
        #expect(engine.hubs["cam"]?.outputs.isEmpty == true)
        try await engine.add(try Configuration.parse("streams:\n  gate: {source: \"testsrc://\", preview: false}", sources: TestSources.opener).streams[0])
        try await engine.remove("gate")
        engine.start()
        await engine.stop()
        #expect(witness.said.withLock { $0 } == ["attach cam", "attach gate", "removed gate", "start", "stopping", "drain", "stop"])
    }

    @Test func theStandardFeaturesMakeEachConfiguredOutput() throws {
        let c = try Configuration.parse(Self.yaml, sources: TestSources.opener)
        let engine = RelayEngine(configuration: c, sources: TestSources.opener, logger: Logger(label: "test"))
        #expect(engine.hls("cam") != nil && engine.recorder("cam") != nil && engine.preview("cam") == nil)
        #expect(engine.feature(RenditionsFeature.self) != nil && engine.feature(HooksFeature.self)?.hooks == nil)
    }
}
