#!/usr/bin/env python3
"""Puts hls.js and a low-latency player page into a directory.

hls.js comes from the PyPI gradio wheel (it ships hls.js 1.6.15 as an ES module; no Debian
package has it), fetched once into a cache and never committed. Used by the HLS tests and by
`liverelay bench latency`.

  hlsjs_page.py DIR     writes DIR/hls.mjs and DIR/hlsjs.html (plays ?src= in LL mode), and
                        DIR/native.html (plays ?src= with the browser's own HLS player)
"""
import os
import shutil
import subprocess
import sys
import zipfile

CACHE = "/tmp/liverelay-test-cache"
WHEEL = "gradio-6.31.0-py3-none-any.whl"
PAGE = """<!doctype html><html><body style="margin:0"><video id="video" muted autoplay playsinline></video>
<script type="module">
import { t as attach } from './hls.mjs';
const v = document.getElementById('video');
window.hls = attach(v, new URLSearchParams(location.search).get('src'), () => v.play());
// As LiveRelay's watch page plays it (ViewerPage.swift): 0.1 s more target latency per stall
// (hls.js adds 1 s), and back to the target when behind it. hls.js's own catch-up needs more
// than 1 s buffered, which a hold-back under a second never has.
window.hls.config.liveSyncOnStallIncrease = 0.1;
setInterval(() => {
  // Live only, and only while the playlist is fresh (a publisher gone leaves it be).
  const h = window.hls, d = h.latestLevelDetails;
  if (!d || !d.live || d.age > 3 * (d.partTarget || d.targetduration)) return;
  const behind = h.latency - h.targetLatency;
  const ahead = v.buffered.length ? v.buffered.end(v.buffered.length - 1) - v.currentTime : 0;
  // A second or more behind (a start far from the edge): jump to it.
  if (h.targetLatency && behind > 1 && !v.seeking && h.liveSyncPosition - v.currentTime > 1) { v.currentTime = h.liveSyncPosition; return; }
  const rate = h.targetLatency && behind > 0.05 && ahead > 0.1 ? Math.min(1.25, 1 + behind) : 1;
  if (v.playbackRate !== rate) v.playbackRate = rate;
}, 250);
</script></body></html>
"""
NATIVE = """<!doctype html><html><body style="margin:0"><video id="video" muted autoplay playsinline></video>
<script>
const v = document.getElementById('video');
v.crossOrigin = 'anonymous'; // LiveRelay's playlists are on another port: canvas reads need CORS
v.src = new URLSearchParams(location.search).get('src');
v.play().catch(() => {});
</script></body></html>
"""


def module():
    cached = os.path.join(CACHE, "hls.mjs")
    if os.path.exists(cached):
        return cached
    os.makedirs(CACHE, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "gradio==6.31.0", "-d", CACHE],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [""])[-1]
        sys.exit("hls.js could not be fetched (pip download gradio==6.31.0): " + last)
    z = zipfile.ZipFile(os.path.join(CACHE, WHEEL))
    names = [n for n in z.namelist() if n.startswith("gradio/templates/frontend/assets/hls-") and n.endswith(".js")]
    if not names:
        sys.exit("hls.js is not in the gradio wheel")
    tmp = cached + ".part"
    with open(tmp, "wb") as f:
        f.write(z.read(names[0]))
    os.replace(tmp, cached)
    return cached


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hlsjs_page.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(module(), os.path.join(out, "hls.mjs"))
    with open(os.path.join(out, "hlsjs.html"), "w") as f:
        f.write(PAGE)
    with open(os.path.join(out, "native.html"), "w") as f:
        f.write(NATIVE)


if __name__ == "__main__":
    main()
