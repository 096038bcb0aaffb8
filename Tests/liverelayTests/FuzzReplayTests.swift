import Testing
import Foundation
import TestSupport

/// The fuzz targets' corpus (checked in, with every input that once crashed) and thousands of
/// mutations of it, replayed through the same code the fuzzers drive (scripts/fuzz.sh runs the
/// real libFuzzer under ASan; FUZZING.md has its figures). A crash fails the test.
@Suite(.ownThreads) struct FuzzReplayTests {
    @Test(arguments: ["config", "url", "hls", "timeline", "rtmp", "demux", "flvfeed", "rtsp", "mp4", "webrtc", "evidence", "onvif", "talk"])
    func theCorpusAndItsMutationsNeverCrash(target: String) throws {
        let dir = Paths.packageRoot.appendingPathComponent("fuzz/corpus/\(target)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).map { dir.appendingPathComponent($0).path }
        try #require(!files.isEmpty)
        // Demuxing opens each input through libavformat, and `rtsp` opens a real RTSP session on
        // a loopback socket (`onvif` its SOAP calls): fewer of them, same idea. `evidence` signs and checks an Ed25519 signature for each input.
        let count = target == "demux" || target == "flvfeed" || target == "mp4" || target == "evidence" ? "400" : target == "rtsp" ? "600" : target == "onvif" ? "1500" : "3000"
        let r = try ChildProcess.run(Paths.fuzzReplay, [target, "--random", count] + files, timeout: 120)
        #expect(r.status == 0 && r.stdout.contains("no crash"), "\(r.output.suffix(2000))")
    }
}
