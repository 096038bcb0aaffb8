#!/usr/bin/env python3
"""Puts hls.js and a low-latency player page into a directory.

hls.js comes from the PyPI gradio wheel (it ships hls.js 1.6.15 as an ES module; no Debian
package has it), fetched once into a cache and never committed. Used by the HLS tests and by
`liverelay bench latency`.

  hlsjs_page.py DIR     writes DIR/hls.mjs and DIR/hlsjs.html (plays ?src= in LL mode, kept at
                        the live edge by LiveRelay's own script from ?edge=http://HOST:PORT), and
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
const q = new URLSearchParams(location.search);
window.hls = attach(v, q.get('src'), () => v.play());
// Kept at the live edge as LiveRelay's watch page keeps it: its own script, loaded from the
// LiveRelay under test (?edge=http://HOST:PORT, whatever the source is), so that there is one copy.
let edge = null;
try { const u = new URL(q.get('edge')); if (u.protocol === 'http:' || u.protocol === 'https:') edge = u.origin; } catch (_) {}
if (edge) {
  const s = document.createElement('script');
  s.src = edge + '/assets/live-edge.js';
  s.onload = () => window.liveRelayKeepLive(window.hls, v);
  s.onerror = () => { window.edgeError = 'no ' + s.src; };
  document.head.appendChild(s);
} else {
  window.edgeError = 'no ?edge=http://HOST:PORT given: hls.js is not kept at the live edge';
}
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
