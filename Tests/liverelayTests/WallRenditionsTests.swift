import Testing
import Foundation
import TestSupport
import Bench
import RelayAPI
import Relay

/// The wall sends each tile the smallest rendition at least as tall as the tile, and the
/// single view the stream itself; each tile says which one it plays. Headless Chromium.
@Suite(.ownThreads, .serialized, .tags(.endToEnd)) struct WallRenditionsTests {
    /// The page script's JSON line: whether each view played what it should (its states are
    /// in the line itself, printed).
    struct PageResult: Decodable {
        var small: Bool?
        var single: Bool?
    }

    @Test func smallTilesPlayASmallRenditionAndTheSingleViewTheSource() throws {
        var yaml = "streams:\n"
        yaml += "  cam: {source: \"testsrc://?size=640x360&fps=15&gop=15\", preview: false, renditions: [{name: 90p, height: 90, bitrate: 100k}, {name: 180p, height: 180, bitrate: 200k}]}\n"
        for n in ["b", "c", "d"] { yaml += "  \(n): {source: \"testsrc://?size=160x96&fps=5\", preview: false}\n" }
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = """
        import json, time
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900", "--force-device-scale-factor=1"): o.add_argument(a)
        o.binary_location = "/usr/bin/chromium"
        d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
        out = {}
        def js(s, *a): return d.execute_script(s, *a)
        def wait(cond, seconds=20):
            end = time.time() + seconds
            while time.time() < end:
                if js("return " + cond): return True
                time.sleep(0.1)
            return False
        try:
            d.get("http://127.0.0.1:\(port)/")
            wait("window.wall && wall.connected")
            js("const s = document.getElementById('layout'); s.value = '4'; s.dispatchEvent(new Event('change'))")
            out["small"] = wait("(document.querySelector('figure[data-tile=cam]').dataset.rendition || '').startsWith('180p') && wall.tiles.cam.painted > 10")
            out["small_state"] = js("const t = wall.tiles.cam; return [t.fig.dataset.rendition, t.painted, t.fig.querySelector('canvas').clientHeight, t.why]")
            d.get("http://127.0.0.1:\(port)/?only=cam")
            wait("window.wall && wall.connected")
            out["single"] = wait("document.querySelector('figure[data-tile=cam]').dataset.rendition === 'source' && wall.tiles.cam.painted > 10")
            out["single_state"] = js("const t = wall.tiles.cam; return [t.fig.dataset.rendition, t.painted, t.fig.querySelector('canvas').clientHeight]")
        finally:
            print(json.dumps(out))
            d.quit()
        """
        let r = try ChildProcess.run(Servers.python, ["-c", script], timeout: 120)
        let line = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let j = try #require(try? JSONDecoder().decode(PageResult.self, from: Data(line.utf8)), "\(r.stdout) \(r.stderr.suffix(1500))")
        print("wall renditions: \(line)")
        #expect(j.small == true, "a 4x4 tile plays the 180p rendition: \(line)")
        #expect(j.single == true, "the single view plays the source: \(line)")
    }
}

/// An H.265 camera (the stamped source, libx265) for a browser that cannot decode H.265 (this
/// machine's headless Chromium): the wall's tile, WHEP on the public page, and hls.js each play
/// the H.264 fallback made from it, the stamps read back; the tile says why. The fallback
/// encodes nothing before anyone needs it, and stops once the wall has gone. Exclusive: two
/// encoders and Chromium on two cores; beside other heavy tests the tile painted under 90
/// pictures in 6 s.
@Suite(.ownThreads, .serialized, .tags(.endToEnd, .exclusive)) struct H265FallbackTests {
    @Test func aBrowserWithoutH265GetsH264MadeFromIt() throws {
        let (serve, port, dir) = try Servers.serve("""
        streams:
          cam: {source: "testsrc://?size=640x360&fps=30&gop=30&codec=hevc", preview: false, h264_fallback: true, hls: {variant: lowLatency}}
        """)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let base = "http://127.0.0.1:\(port)"
        func browser(_ args: [String]) throws -> BrowserReport {
            let r = try ChildProcess.run(Servers.python, [Paths.packageRoot.appendingPathComponent("scripts/browser.py").path] + args, timeout: 90)
            return (try? BrowserReport.decode(r.stdout.split(separator: "\n").last ?? "")) ?? BrowserReport(error: r.stdout + r.stderr)
        }
        func fallback() -> RenditionInfo? { (try? Servers.api(StreamView.self, "\(base)/api/streams/cam_h264"))?.rendition }
        #expect(fallback()?.encoding != true && (fallback()?.framesEncoded ?? 0) == 0, "encoding before anyone needs it")

        let wall = try browser(["\(base)/?only=cam", "--wall", "--stamps-tile", "cam", "--seconds", "6"])
        let tile = wall.wall?.tiles?["cam"]
        #expect(wall.wall?.decoders == ["avc1"], "this Chromium decodes no H.265: \(wall)")
        #expect(tile?.path == "h264" && tile?.rendition?.hasPrefix("h264") == true && (tile?.painted ?? 0) >= 90, "\(wall)")
        #expect(tile?.why?.contains("H.265 is not decoded by this page: H.264 made from it") == true, "\(String(describing: tile?.why))")
        #expect((wall.stamps ?? 0) >= 20, "stamps read back from the wall's tile: \(wall)")
        #expect((fallback()?.framesEncoded ?? 0) >= 90)

        // The wall gone, nobody needs it: it stops (on demand, 10 s after the last viewer).
        var encoding = true
        let end = Date().addingTimeInterval(20)
        while encoding && Date() < end {
            usleep(500_000)
            encoding = fallback()?.encoding ?? true
        }
        #expect(!encoding, "the fallback still encodes with nobody watching")

        // The public page: WHEP (the offer has no H.265) answered from the fallback.
        let page = try browser(["\(base)/streams/cam/watch", "--stamps", "video", "--seconds", "6"])
        #expect(page.player == "webrtc" && page.webrtcError == nil && (page.stamps ?? 0) >= 90, "\(page)")

        // hls.js: the multivariant playlist lists the source (hvc1) and the fallback (avc1).
        let master = try ChildProcess.run("/usr/bin/curl", ["-s", "\(base)/streams/cam/hls/master.m3u8"], timeout: 10).stdout
        #expect(master.contains("CODECS=\"hvc1.") && master.contains("CODECS=\"avc1.") && master.contains("/streams/cam_h264/hls/index.m3u8"), "\(master)")
    }
}
