#!/usr/bin/python3
"""Drives headless Chromium (Selenium) against a LiveRelay page, in real time, and reports what
a viewer saw as one JSON line. Used by the tests and the bench; needs chromium, chromium-driver
and python3-selenium (scripts/setup.sh installs them).

  browser.py URL [--size 640x360] [--seconds 3] [--screenshot out.png]
             [--img ID]      count distinct pictures an <img> (MJPEG) showed
             [--all-imgs]    for every <img> on the page, how many distinct pictures it showed
             [--insecure]    accept a self-signed certificate (HTTPS tests)
             [--wait-text CSS=TEXT]  wait (up to --seconds) until the element's text contains TEXT
             [--video ID]    report a <video>'s progress (time advancing, errors)
             [--stamps-tile NAME --csv OUT]  the ops wall: the stamps its tile NAME painted
             [--wall]        the ops wall (window.wall): print "painting NAME" when a tile first
                             paints, "signal NAME lost|ok" as tiles lose and regain their
                             source, and at the end each tile's path, pictures, changes, latency
             [--keys KEYS [--keys-after 3]]  press KEYS on the page, one at a time, once it has
                             loaded (the wall's 1-9, f, m, b), before the mode below
             [--fake-mic FILE.wav]  the fake microphone plays FILE once (push-to-talk)
             [--cpu-throttle N]  the page's main thread N times slower (a browser that cannot keep up)
             [--steps "key:1;hold:ArrowRight:1.2;sleep:1;click:CSS;eval:JS"]  after --keys: keys
                             pressed, held for seconds, pauses, clicks; each eval's value is
                             reported in "evals"
             [--stamps ID --csv OUT]  read LiveRelay's test-source stamp from every frame the
                             <video> presents (requestVideoFrameCallback), write
                             frame,capture_ms,received_ms,latency_ms rows to OUT
"""
import argparse, json, os, signal, subprocess, sys, time

os.environ.setdefault("SE_AVOID_STATS", "true")
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

DRIVER = None

def stop_browser(*_):
    if DRIVER is not None:
        try:
            pid = DRIVER.service.process.pid
            subprocess.run(["/usr/bin/pkill", "-TERM", "-P", str(pid)], timeout=2)
            os.kill(pid, signal.SIGTERM)
        except Exception:
            pass
    os._exit(143)

def main():
    # Stopped by its caller (SIGTERM, then SIGKILL 2 s later): Chromium and chromedriver go
    # at once. Left behind, they kept a fake camera running and loaded the machine.
    signal.signal(signal.SIGTERM, stop_browser)
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--screenshot")
    ap.add_argument("--img")
    ap.add_argument("--all-imgs", action="store_true")
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--wait-text")
    ap.add_argument("--video")
    ap.add_argument("--wall", action="store_true")
    ap.add_argument("--stamps-tile")
    ap.add_argument("--stamps")
    ap.add_argument("--csv")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--fake-camera", action="store_true", help="Chromium's fake camera and microphone, allowed without asking")
    ap.add_argument("--fake-mic", help="Chromium's fake microphone plays this WAV file (once, from when the page opens it), allowed without asking")
    ap.add_argument("--hold", type=float, default=0, help="stay on the page this many seconds more at the end")
    ap.add_argument("--keys", help="keys pressed on the page, one at a time, --keys-after seconds after it loads (before any other mode)")
    ap.add_argument("--keys-after", type=float, default=3)
    ap.add_argument("--steps", help="';'-separated key:K, hold:K:SECONDS, sleep:SECONDS, click:CSS, eval:JS (after --keys)")
    ap.add_argument("--cpu-throttle", type=float, default=0, help="slow the page's main thread this many times (Chromium's CPU throttling): a browser that cannot keep up")
    ap.add_argument("--rtc-stats", action="store_true", help="add the page's RTCPeerConnection (window.pc) inbound video stats: losses, NACKs, freezes, sender reports")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.lower().split("x"))
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--autoplay-policy=no-user-gesture-required", "--mute-audio", f"--window-size={w},{h}",
                # WebRTC to a server on this machine's loopback (the tests' and the bench's).
                "--allow-loopback-in-peer-connection"):
        opts.add_argument(arg)
    if a.insecure:
        opts.add_argument("--ignore-certificate-errors")
    if a.fake_camera or a.fake_mic:
        opts.add_argument("--use-fake-device-for-media-stream")
        opts.add_argument("--use-fake-ui-for-media-stream")
    if a.fake_mic:
        opts.add_argument(f"--use-file-for-fake-audio-capture={a.fake_mic}%noloop")
    # Many MJPEG <img>s never finish loading: do not wait for the load event.
    opts.page_load_strategy = "eager"
    opts.binary_location = "/usr/bin/chromium"
    global DRIVER
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    DRIVER = driver
    driver.set_page_load_timeout(a.timeout)
    driver.set_script_timeout(a.timeout)
    out = {"url": a.url}
    try:
        driver.set_window_size(w, h)
        # The viewport, not the window, must match the picture: correct for the browser's chrome.
        vw, vh = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        driver.set_window_size(w + (w - vw), h + (h - vh))
        # An MJPEG <img> keeps its response open: do not wait for the load event.
        driver.execute_cdp_cmd("Page.enable", {})
        if a.cpu_throttle > 1:
            driver.execute_cdp_cmd("Emulation.setCPUThrottlingRate", {"rate": a.cpu_throttle})
        driver.get("about:blank")
        driver.execute_script("window.location.href = arguments[0]", a.url)
        deadline = time.time() + a.timeout
        while time.time() < deadline:
            try:
                if driver.execute_script("return document.readyState") in ("interactive", "complete"):
                    break
            except Exception:
                pass
            time.sleep(0.1)
        if a.keys:
            from selenium.webdriver.common.action_chains import ActionChains
            time.sleep(a.keys_after)
            for k in a.keys:
                ActionChains(driver).send_keys(k).perform()
                time.sleep(0.3)
            out["keys"] = a.keys
        if a.steps:
            from selenium.webdriver.common.action_chains import ActionChains
            from selenium.webdriver.common.by import By
            from selenium.webdriver.common.keys import Keys
            named = {"ArrowLeft": Keys.ARROW_LEFT, "ArrowRight": Keys.ARROW_RIGHT, "ArrowUp": Keys.ARROW_UP, "ArrowDown": Keys.ARROW_DOWN}
            if not a.keys: time.sleep(a.keys_after)
            out["evals"] = []
            for step in a.steps.split(";"):
                kind, _, rest = step.partition(":")
                if kind == "key":
                    ActionChains(driver).send_keys(named.get(rest, rest)).perform()
                elif kind == "hold":
                    key, _, seconds = rest.rpartition(":")
                    k = named.get(key, key)
                    ActionChains(driver).key_down(k).perform(); time.sleep(float(seconds)); ActionChains(driver).key_up(k).perform()
                elif kind == "sleep":
                    time.sleep(float(rest))
                elif kind == "click":
                    driver.find_element(By.CSS_SELECTOR, rest).click()
                elif kind == "eval":
                    out["evals"].append(driver.execute_script("return " + rest))
                time.sleep(0.2)
        if a.img:
            out.update(watch_img(driver, a.img, a.seconds, deadline))
        if a.all_imgs:
            out.update(watch_all_imgs(driver, a.seconds))
        if a.wait_text:
            out.update(wait_text(driver, a.wait_text, a.seconds))
        if a.wall:
            out.update(watch_wall(driver, a.seconds))
        if a.stamps_tile:
            time.sleep(a.seconds)
            log = driver.execute_script("const t = window.wall && window.wall.tiles[arguments[0]]; return t ? t.stampLog : []", a.stamps_tile)
            if a.csv:
                with open(a.csv, "w") as f:
                    f.write("frame,capture_ms,received_ms,latency_ms\n")
                    for n, t, now, *_ in log:
                        f.write(f"{n},{t},{now},{now - t}\n")
            lat = sorted(e[2] - e[1] for e in log)
            out.update({"stamps": len(log), "p50": lat[len(lat) // 2] if lat else None})
        if a.video:
            out.update(watch_video(driver, a.video, a.seconds, deadline))
            hls = driver.execute_script(HLSJS_STATE)
            if hls:
                out["hlsjs"] = hls
        if a.stamps:
            out.update(read_stamps(driver, a.stamps, a.seconds, deadline, a.csv))
        if a.rtc_stats:
            out["rtc"] = driver.execute_async_script(RTC_STATS)
        if not a.img and not a.video and not a.stamps and not a.all_imgs and not a.wait_text and not a.wall and not a.stamps_tile:
            time.sleep(a.seconds)
        if a.hold > 0:
            # Still on the page (a publisher keeps sending); said once it stays, for the caller.
            print("holding", flush=True)
            time.sleep(a.hold)
            out["state_after_hold"] = driver.execute_script("return document.body.dataset.state || null")
        if a.screenshot:
            driver.save_screenshot(a.screenshot)
            out["screenshot"] = a.screenshot
    finally:
        driver.quit()
    print(json.dumps(out))

# A hash of the picture an <img> shows now (null before it has one).
HASH_IMG = """
function hashImg(img) {
  if (!img || img.naturalWidth === 0) return null;
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let hash = 0;
  for (let i = 0; i < d.length; i += 97) hash = (hash * 31 + d[i]) >>> 0;
  return hash;
}
"""

SAMPLE_IMG = HASH_IMG + """
const img = document.getElementById(arguments[0]);
const hash = hashImg(img);
return hash === null ? null : [img.naturalWidth, img.naturalHeight, hash];
"""

SAMPLE_ALL_IMGS = HASH_IMG + """
return Array.from(document.images).map(hashImg);
"""

def wait_text(driver, spec, seconds):
    selector, _, text = spec.rpartition("=")
    print("watching", flush=True)
    seen = []
    end = time.time() + seconds
    while time.time() < end:
        got = driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.textContent : null", selector)
        if got is not None and (not seen or seen[-1] != got):
            seen.append(got)
        if got is not None and text in got:
            return {"text": got, "found": True, "seen": seen}
        time.sleep(0.1)
    return {"found": False, "seen": seen}

WALL_STATE = """
if (!window.wall) return null;
const p95 = l => { if (!l.length) return null; const s = l.slice().sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * 0.95))]; };
const out = {};
for (const [name, t] of Object.entries(window.wall.tiles)) {
  const lat = t.latency.slice().sort((a, b) => a - b);
  out[name] = {path: t.path, why: t.why, rendition: t.rendition || null, painted: t.painted, changes: t.changes, lost: !!t.lostSince, state: t.state,
               visible: t.visible, dropped: t.dropped + t.serverDropped, bytes: t.bytes,
               latency_p50: lat.length ? lat[lat.length >> 1] : null, latency_p95: p95(lat), latency_kind: t.latencyKind,
               width: t.canvas.width, height: t.canvas.height,
               // The page's freshness: times it fell behind, whether it says it is dropping now,
               // the server's drops by reason, and where pictures waited on the page (p95, ms).
               behind: t.behind || 0, dropping: t.fig.dataset.dropping || '', server_drops: t.serverReasons || {},
               wait_receive_p95: p95(t.waits ? t.waits.receive : []), wait_decode_p95: p95(t.waits ? t.waits.decode : [])};
}
return {connected: window.wall.connected, decoders: window.wall.decoders, tiles: out};
"""

def watch_wall(driver, seconds):
    print("watching", flush=True)
    painting, lost = set(), set()
    state = None
    end = time.time() + seconds
    while time.time() < end:
        state = driver.execute_script(WALL_STATE)
        for name, t in ((state or {}).get("tiles") or {}).items():
            if t["painted"] > 0 and name not in painting:
                painting.add(name); print("painting", name, flush=True)
            if t["lost"] and name not in lost:
                lost.add(name); print("signal", name, "lost", flush=True)
            elif not t["lost"] and name in lost and t["state"] == "live":
                lost.discard(name); print("signal", name, "ok", flush=True)
        time.sleep(0.1)
    return {"wall": state}

def watch_all_imgs(driver, seconds):
    seen = None
    end = time.time() + seconds
    while time.time() < end:
        hashes = driver.execute_script(SAMPLE_ALL_IMGS)
        if seen is None:
            seen = [set() for _ in hashes]
        for i, h in enumerate(hashes[:len(seen)]):
            if h is not None:
                seen[i].add(h)
        time.sleep(0.1)
    counts = [len(s) for s in (seen or [])]
    return {"imgs": len(counts), "distinct": counts, "live": sum(1 for c in counts if c >= 3)}

def watch_img(driver, ident, seconds, deadline):
    first = None
    while time.time() < deadline:
        first = driver.execute_script(SAMPLE_IMG, ident)
        if first:
            break
        time.sleep(0.1)
    if not first:
        return {"img": None}
    hashes = {first[2]}
    samples = 0
    end = time.time() + seconds
    while time.time() < end:
        s = driver.execute_script(SAMPLE_IMG, ident)
        if s:
            hashes.add(s[2]); samples += 1
        time.sleep(0.05)
    return {"img": {"width": first[0], "height": first[1], "samples": samples, "distinct": len(hashes)}}

VIDEO_STATE = """
const v = document.getElementById(arguments[0]);
if (!v) return null;
return {currentTime: v.currentTime, readyState: v.readyState, paused: v.paused,
        error: v.error ? v.error.code + ' ' + (v.error.message || '') : null,
        width: v.videoWidth, height: v.videoHeight,
        frames: v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality().totalVideoFrames : null};
"""

def watch_video(driver, ident, seconds, deadline):
    start = None
    while time.time() < deadline:
        s = driver.execute_script(VIDEO_STATE, ident)
        if s and (s["error"] or s["currentTime"] > 0):
            start = s
            break
        time.sleep(0.1)
    if not start:
        return {"video": driver.execute_script(VIDEO_STATE, ident), "started": False}
    time.sleep(seconds)
    end = driver.execute_script(VIDEO_STATE, ident)
    return {"video": end, "started": True, "advanced": end["currentTime"] - start["currentTime"]}

# The stamp barcode (Sources/MediaCore/Stamp.swift): 16x7 cells over the top 7/28 of the
# picture; row 0 a sync pattern, then 48 bits of capture ms, 32 bits of frame counter, CRC-16.
STAMP_READER = """
const v = document.getElementById(arguments[0]);
window.__stamps = []; window.__misreads = 0;
const sync = [1,0,1,0,1,1,0,0,1,1,1,1,0,0,0,0];
const c = document.createElement('canvas'); const g = c.getContext('2d', {willReadFrequently: true});
function crc16(bits) { let crc = 0xFFFF; for (const b of bits) { const top = (crc & 0x8000) !== 0; crc = (crc << 1) & 0xFFFF; if (top !== (b === 1)) crc ^= 0x1021; } return crc; }
function read() {
  const w = v.videoWidth, h = v.videoHeight; if (!w || !h) return null;
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
  g.drawImage(v, 0, 0, w, h);
  const d = g.getImageData(0, 0, w, Math.ceil(h * 7 / 28)).data;
  const cells = [];
  for (let r = 0; r < 7; r++) for (let col = 0; col < 16; col++) {
    const x0 = Math.floor(col * w / 16), x1 = Math.floor((col + 1) * w / 16), y0 = Math.floor(r * h / 28), y1 = Math.floor((r + 1) * h / 28);
    const cw = x1 - x0, ch = y1 - y0, sx0 = x0 + (cw >> 2), sx1 = Math.max(sx0 + 1, x1 - (cw >> 2)), sy0 = y0 + (ch >> 2), sy1 = Math.max(sy0 + 1, y1 - (ch >> 2));
    let sum = 0, n = 0;
    for (let y = sy0; y < sy1; y++) for (let x = sx0; x < sx1; x++) { const i = (y * w + x) * 4; sum += 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]; n++; }
    cells.push(sum / n > 128 ? 1 : 0);
  }
  for (let i = 0; i < 16; i++) if (cells[i] !== sync[i]) return null;
  const p = cells.slice(16);
  let t = 0; for (let i = 0; i < 48; i++) t = t * 2 + p[i];
  let n = 0; for (let i = 48; i < 80; i++) n = n * 2 + p[i];
  let crc = 0; for (let i = 80; i < 96; i++) crc = crc * 2 + p[i];
  if (crc16(p.slice(0, 80)) !== crc) return null;
  return [n, t];
}
function onFrame() {
  const s = read(); const now = Date.now();
  if (s) window.__stamps.push([s[0], s[1], now]); else window.__misreads++;
  v.requestVideoFrameCallback(onFrame);
}
v.requestVideoFrameCallback(onFrame);
"""

RTC_STATS = """
const done = arguments[arguments.length - 1];
if (!window.pc) { done(null); return; }
window.pc.getStats().then(r => {
  const o = {};
  r.forEach(s => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      for (const k of ['packetsReceived', 'packetsLost', 'nackCount', 'pliCount', 'firCount', 'framesDecoded',
                       'keyFramesDecoded', 'framesDropped', 'freezeCount', 'totalFreezesDuration', 'jitter']) o[k] = s[k];
    }
    // What the server's sender reports said: the capture time (NTP) of the last one, and how many.
    if (s.type === 'remote-outbound-rtp' && s.kind === 'video') {
      o.reportsSent = s.reportsSent; o.remoteTimestamp = s.remoteTimestamp; o.readAt = Date.now();
    }
  });
  done(o);
}, () => done(null));
"""

def read_stamps(driver, ident, seconds, deadline, csv_path):
    while time.time() < deadline:
        if driver.execute_script("const v = document.getElementById(arguments[0]); return v && v.readyState >= 2", ident):
            break
        time.sleep(0.1)
    driver.execute_script(STAMP_READER, ident)
    time.sleep(seconds)
    stamps = driver.execute_script("return window.__stamps")
    misreads = driver.execute_script("return window.__misreads")
    if csv_path:
        with open(csv_path, "w") as f:
            f.write("frame,capture_ms,received_ms,latency_ms\n")
            for n, t, now in stamps:
                f.write(f"{n},{t},{now},{now - t}\n")
    lat = sorted(now - t for _, t, now in stamps)
    out = {"stamps": len(stamps), "misreads": misreads, "p50": lat[len(lat) // 2] if lat else None}
    # Which player the page chose (data-player: webrtc, hls.js, native) and why WebRTC did not play.
    out["player"] = driver.execute_script("const v = document.getElementById(arguments[0]); return v && v.dataset.player || null", ident)
    out["webrtc_error"] = driver.execute_script("const v = document.getElementById(arguments[0]); return v && v.dataset.webrtcError || null", ident)
    # hls.js's own view, when the page plays with it: what latency it aimed for and how often it stalled.
    hls = driver.execute_script(HLSJS_STATE)
    if hls:
        out["hlsjs"] = hls
    return out

HLSJS_STATE = """
const h = window.hls; if (!h || h.targetLatency === undefined) return null;
const lc = h.latencyController || {};
const d = lc.levelDetails || {};
return {targetLatency: h.targetLatency, latency: h.latency, stalls: lc.stallCount,
        targetDuration: d.targetduration, partTarget: d.partTarget, canBlockReload: d.canBlockReload,
        canSkipUntil: d.canSkipUntil, skippedSegments: d.skippedSegments, deltaUpdateFailed: d.deltaUpdateFailed,
        keptLive: (window.liveEdgeTicks || 0) > 0, edgeError: window.edgeError || null};
"""

if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line, for the test's message
        print(json.dumps({"error": str(e).splitlines()[0] if str(e) else type(e).__name__}))
        sys.exit(1)
