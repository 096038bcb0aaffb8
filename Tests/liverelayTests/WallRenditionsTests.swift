import Testing
import Foundation
import TestSupport
import Bench

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
