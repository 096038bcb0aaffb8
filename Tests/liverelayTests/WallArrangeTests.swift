import Testing
import Foundation
import TestSupport
import Bench

/// The wall as an operator arranges it, in headless Chromium: layouts, groups, filters by name
/// and state, the keyboard and full screen, the arrangement found again after a reload, a lost
/// source highlighted, and the selected tile's AAC heard (the page's AudioDecoder outputs samples).
@Suite(.ownThreads, .serialized) struct WallArrangeTests {
    /// The page script's JSON line (its keys as it writes them; arrays of mixed values read by
    /// position).
    struct ArrangeResult: Decodable {
        /// `[the wall's layout class, the tiles shown]`.
        struct LayoutShown: Decodable {
            var layout: String?
            var tiles: [String]?
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                layout = try c.decodeIfPresent(String.self)
                tiles = try c.decodeIfPresent([String].self)
            }
        }
        /// `[the big tile, how many tiles are shown]`.
        struct BigTile: Decodable {
            var tile: String?
            var count: Int?
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                tile = try c.decodeIfPresent(String.self)
                count = try c.decodeIfPresent(Int.self)
            }
        }
        /// `[layout, group, the tiles shown]` after the reload.
        struct Reloaded: Decodable {
            var layout: String?
            var group: String?
            var tiles: [String]?
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                layout = try c.decodeIfPresent(String.self)
                group = try c.decodeIfPresent(String.self)
                tiles = try c.decodeIfPresent([String].self)
            }
        }
        struct AudioState: Decodable {
            var codec: String?
            var errors: Int?
        }
        var connected: Bool?
        var twoByTwo: LayoutShown?
        var north: [String]?
        var filterB: [String]?
        var goneLost: Bool?
        var stateLost: [String]?
        var big: BigTile?
        var selected: String?
        var tileFull: String?
        var afterEsc: Bool?
        var wallFull: String?
        var reloaded: Reloaded?
        var audio: Bool?
        var audioState: AudioState?
        var mutedAgain: Bool?

        enum CodingKeys: String, CodingKey {
            case connected, north, big, selected, reloaded, audio
            case twoByTwo = "2x2"
            case filterB = "filter_b"
            case goneLost = "gone_lost"
            case stateLost = "state_lost"
            case tileFull = "tile_full"
            case afterEsc = "after_esc"
            case wallFull = "wall_full"
            case audioState = "audio_state"
            case mutedAgain = "muted_again"
        }
    }

    @Test func theOperatorArrangesTheWallAndHearsTheSelectedTile() throws {
        let sound = "exec:ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x180:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast -tune zerolatency -g 25 -c:a aac -b:a 64k -f mpegts -"
        var yaml = "streams:\n"
        for (name, group) in [("a", "north"), ("b", "north"), ("c", "north"), ("d", "south"), ("e", "south")] {
            yaml += "  \(name): {source: \"testsrc://?size=160x96&fps=10\", group: \(group)}\n"
        }
        yaml += "  gone: {source: \"rtsp://127.0.0.1:\(FreePort.tcp())/none\", group: south, open_timeout: 1s}\n"
        yaml += "  sound: {source: \"\(sound)\", group: south, on_demand_idle: 30s}\n"
        let (serve, port, dir) = try Servers.serve(yaml)
        defer { serve.stop(); try? FileManager.default.removeItem(at: dir) }
        let script = """
        import json, time
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.common.action_chains import ActionChains
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--window-size=1280,900"): o.add_argument(a)
        o.binary_location = "/usr/bin/chromium"
        d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
        out = {}
        def js(s, *a): return d.execute_script(s, *a)
        def wait(cond, seconds=15):
            end = time.time() + seconds
            while time.time() < end:
                if js("return " + cond): return True
                time.sleep(0.1)
            return False
        def pick(ident, value):
            js("const s = document.getElementById(arguments[0]); s.value = arguments[1]; s.dispatchEvent(new Event('change'))", ident, value)
            time.sleep(0.3)
        def shown(): return js("return [...document.querySelectorAll('figure[data-tile]:not(.filtered)')].map(f => f.dataset.tile)")
        def key(k): ActionChains(d).send_keys(k).perform(); time.sleep(0.5)
        try:
            d.get("http://127.0.0.1:\(port)/")
            out["connected"] = wait("window.wall && wall.connected && wall.arrange")
            pick("layout", "2"); out["2x2"] = [js("return document.getElementById('wall').className"), shown()]
            pick("layout", "auto"); pick("group", "north"); out["north"] = shown()
            pick("group", ""); f = d.find_element(By.ID, "filter"); f.send_keys("b"); time.sleep(0.3); out["filter_b"] = shown()
            js("const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'))"); time.sleep(0.3)
            out["gone_lost"] = wait("document.querySelector('figure[data-tile=gone]').classList.contains('lost')")
            pick("state", "lost"); out["state_lost"] = shown(); pick("state", "")
            pick("layout", "1+5"); out["big"] = [js("return document.querySelector('figure.big')?.dataset.tile"), len(shown())]
            d.find_element(By.TAG_NAME, "body").click()
            key("2"); out["selected"] = js("return wall.arrange.selected")
            key("f"); out["tile_full"] = js("return document.fullscreenElement && document.fullscreenElement.dataset.tile")
            key(Keys.ESCAPE); time.sleep(0.5); out["after_esc"] = js("return !!document.fullscreenElement")
            d.find_element(By.ID, "fullwall").click(); time.sleep(0.5); out["wall_full"] = js("return document.fullscreenElement && document.fullscreenElement.id")
            js("document.exitFullscreen()"); time.sleep(0.3)
            pick("layout", "3"); pick("group", "south")
            d.refresh()
            wait("window.wall && wall.connected && wall.arrange")
            out["reloaded"] = [js("return document.getElementById('layout').value"), js("return document.getElementById('group').value"), shown()]
            # Sound: the tile with AAC selected by a click, then 'm'.
            d.find_element(By.CSS_SELECTOR, "figure[data-tile=sound] canvas").click(); time.sleep(0.3)
            key("m")
            out["audio"] = wait("wall.audio.samples > 4800", 25)
            out["audio_state"] = js("return {samples: wall.audio.samples, chunks: wall.audio.chunks, errors: wall.audio.errors, codec: wall.audio.codec, stream: wall.audio.stream}")
            key("m"); out["muted_again"] = js("return wall.audio.stream === null")
        finally:
            print(json.dumps(out))
            d.quit()
        """
        let r = try ChildProcess.run(Servers.python, ["-c", script], timeout: 150)
        let line = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let j = try #require(try? JSONDecoder().decode(ArrangeResult.self, from: Data(line.utf8)), "\(r.stdout) \(r.stderr.suffix(1500))")
        #expect(j.connected == true, "\(line)")
        #expect(j.twoByTwo?.layout == "l2" && j.twoByTwo?.tiles?.count == 4, "\(line)")
        #expect(j.north == ["a", "b", "c"], "\(line)")
        #expect(j.filterB == ["b"], "\(line)")
        #expect(j.goneLost == true, "a lost source is highlighted: \(line)")
        #expect(j.stateLost == ["gone"], "\(line)")
        #expect(j.big?.tile == "a" && j.big?.count == 6, "\(line)")
        #expect(j.selected == "b", "\(line)")
        #expect(j.tileFull == "b", "\(line)")
        #expect(j.afterEsc == false, "\(line)")
        #expect(j.wallFull == "wall", "\(line)")
        // Found again after the reload: its layout, its group, its tiles.
        let reloaded = j.reloaded
        #expect(reloaded?.layout == "3" && reloaded?.group == "south" && reloaded?.tiles == ["d", "e", "gone"] + ["sound"], "\(line)")
        #expect(j.audio == true, "the AAC tile was not heard: \(line) \(serve.stderr.suffix(1500))")
        let state = j.audioState
        #expect(state?.codec?.hasPrefix("mp4a.40.2") == true && state?.errors == 0, "\(String(describing: state))")
        #expect(j.mutedAgain == true)
    }
}
