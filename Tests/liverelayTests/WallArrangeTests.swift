import Testing
import Foundation
import TestSupport
import Bench

/// The wall as an operator arranges it, in headless Chromium: layouts, groups, filters by name
/// and state, the keyboard and full screen, the arrangement found again after a reload, a lost
/// source highlighted, and the selected tile's AAC heard (the page's AudioDecoder outputs samples).
@Suite(.ownThreads, .serialized) struct WallArrangeTests {
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
        let j = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(r.stdout) \(r.stderr.suffix(1500))")
        #expect(j["connected"] as? Bool == true, "\(j)")
        let twoByTwo = j["2x2"] as? [Any] ?? []
        #expect(twoByTwo.first as? String == "l2" && (twoByTwo.last as? [String])?.count == 4, "\(j)")
        #expect(j["north"] as? [String] == ["a", "b", "c"], "\(j)")
        #expect(j["filter_b"] as? [String] == ["b"], "\(j)")
        #expect(j["gone_lost"] as? Bool == true, "a lost source is highlighted: \(j)")
        #expect(j["state_lost"] as? [String] == ["gone"], "\(j)")
        #expect((j["big"] as? [Any])?.first as? String == "a" && (j["big"] as? [Any])?.last as? Int == 6, "\(j)")
        #expect(j["selected"] as? String == "b", "\(j)")
        #expect(j["tile_full"] as? String == "b", "\(j)")
        #expect(j["after_esc"] as? Bool == false, "\(j)")
        #expect(j["wall_full"] as? String == "wall", "\(j)")
        // Found again after the reload: its layout, its group, its tiles.
        let reloaded = j["reloaded"] as? [Any] ?? []
        #expect(reloaded.count == 3 && reloaded[0] as? String == "3" && reloaded[1] as? String == "south"
                && reloaded[2] as? [String] == ["d", "e", "gone"] + ["sound"], "\(j)")
        #expect(j["audio"] as? Bool == true, "the AAC tile was not heard: \(j) \(serve.stderr.suffix(1500))")
        let state = j["audio_state"] as? [String: Any] ?? [:]
        #expect((state["codec"] as? String)?.hasPrefix("mp4a.40.2") == true && state["errors"] as? Int == 0, "\(state)")
        #expect(j["muted_again"] as? Bool == true)
    }
}
