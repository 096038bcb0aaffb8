#!/usr/bin/env python3
"""Simulated LL-HLS players: each follows the live edge as hls.js does, one part at a time (the
preload-hinted part, then the blocking playlist request for it), over its own keep-alive
connection. For loading an edge cache or an origin.

  llhls_viewers.py http://127.0.0.1:8081/streams/cam/hls/index.m3u8 --viewers 200 --seconds 20

Prints one JSON object: viewers, parts and playlists fetched, distinct parts seen, errors, hinted
parts that never came (404, as LL-HLS allows), and
each viewer's parts per second (a viewer that falls behind fetches fewer)."""
import argparse, http.client, json, re, threading, time, urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("url")
ap.add_argument("--viewers", type=int, default=100)
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--ramp", type=float, default=2, help="seconds over which the viewers start")
a = ap.parse_args()
u = urllib.parse.urlsplit(a.url)
base = u.path.rsplit("/", 1)[0] + "/"
query = u.query
HINT = re.compile(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"')
PART = re.compile(r"part(\d+)\.(\d+)\.m4s")
lock = threading.Lock()
totals = {"parts": 0, "playlists": 0, "errors": 0, "gone": 0, "bytes": 0}
seen = set()
rates = []

def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body

def viewer(i, stop):
    time.sleep(a.ramp * i / max(1, a.viewers))
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    parts = playlists = errors = gone = 0
    started = time.time()
    try:
        status, body = get(conn, a.url[len(f"{u.scheme}://{u.netloc}"):])
        playlists += 1
        while time.time() < stop:
            m = HINT.search(body.decode("utf-8", "replace")) if status == 200 else None
            if not m:
                errors += 1
                time.sleep(0.2)
                status, body = get(conn, u.path + ("?" + query if query else ""))
                continue
            hint = m.group(1)
            pm = PART.search(hint)
            msn, part = int(pm.group(1)), int(pm.group(2))
            status, data = get(conn, base + hint)
            if status == 200:
                parts += 1
                with lock:
                    totals["bytes"] += len(data)
                    seen.add((msn, part))
            elif status == 404:
                gone += 1     # a hinted part the next keyframe overtook: it never comes (LL-HLS allows it)
            else:
                errors += 1
            q = f"_HLS_msn={msn}&_HLS_part={part}" + ("&" + query if query else "")
            status, body = get(conn, f"{u.path}?{q}")
            playlists += 1
            if status != 200:
                errors += 1
    except Exception:
        errors += 1
    finally:
        conn.close()
    with lock:
        totals["parts"] += parts
        totals["playlists"] += playlists
        totals["errors"] += errors
        totals["gone"] += gone
        rates.append(parts / max(0.001, time.time() - started))

stop = time.time() + a.ramp + a.seconds
threads = [threading.Thread(target=viewer, args=(i, stop), daemon=True) for i in range(a.viewers)]
for t in threads: t.start()
for t in threads: t.join(a.seconds + a.ramp + 60)
rates.sort()
print(json.dumps(dict(totals, viewers=a.viewers, seconds=a.seconds, distinct_parts=len(seen),
                      parts_per_second_p10=rates[len(rates) // 10] if rates else 0,
                      parts_per_second_p50=rates[len(rates) // 2] if rates else 0)))
