import Testing
import StampedSource
import Foundation
import MediaCore
import Demux
import Mux
import TestSupport

@Suite(.ownThreads) struct PublisherTests {
    init() { FFmpegLog.silence() }

    @Test(arguments: ["ts", "mp4", "flv", "mkv"])
    func filesAreReadableByFFprobe(ext: String) throws {
        let dir = Paths.tempDirectory("pub")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("out.\(ext)")
        try TestMedia.writeFile(file, frames: 60, size: "320x240", fps: 30, gop: 30)
        let r = try ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                         "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", file.path], timeout: 20)
        #expect(r.status == 0, "\(r.stderr)")
        // MPEG-TS lists the stream under its program as well: compare distinct lines.
        #expect(Set(r.stdout.split(separator: "\n").map(String.init)) == ["h264,320,240,60"])
    }

    @Test(.tags(.fast)) func aDestinationThatNeverAnswersTimesOut() throws {
        let silent = TestMedia.SilentServer()
        let source = try TestSource(url: "testsrc://?size=320x240&frames=1&realtime=false")
        var o = PublishOptions()
        o.connectTimeout = 1
        let start = Date()
        let error = #expect(throws: PublishError.self) {
            _ = try Publisher(url: "rtmp://127.0.0.1:\(silent.port)/app/SECRETKEY123", streams: source.streams, options: o)
        }
        #expect(error?.timedOut == true)
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(!"\(String(describing: error))".contains("SECRETKEY123"))
    }

    @Test(.tags(.fast)) func testSourceURLsAreValidatedByKey() {
        #expect(throws: IngestError.self) { _ = try TestSourceSettings(url: "testsrc://?size=big") }
        do { _ = try TestSourceSettings(url: "testsrc://?sise=640x360") } catch {
            #expect(error.detail.contains("unknown key \"sise\""))
        }
        let s = try? TestSourceSettings(url: "testsrc://?size=1280x720&fps=25&gop=50&bitrate=2500")
        #expect(s?.encoder.width == 1280 && s?.encoder.fps == 25 && s?.encoder.gop == 50 && s?.encoder.bitrateKbps == 2500)
    }
}
