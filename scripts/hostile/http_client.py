#!/usr/bin/python3
"""A hostile HTTP and WebSocket client against LiveRelay's HTTP server, mutated from a seed.

Each exchange is one connection with one of: an API request (GET/POST/PUT/PATCH/DELETE on
/api/streams…, bodies of every JSON shape), an HLS request (playlist and part names, _HLS_msn /
_HLS_part / _HLS_skip at their extremes), an HLS upload (PUT /ingest/{stream}/{file}: playlists
and segments, lying lengths), a page or preview URL with odd paths, or the wall's WebSocket
(/api/wall) sent mutated JSON messages and frames. Headers, lengths and bytes are broken from
random.Random(f"{seed}:{n}"); one line per exchange says what was sent, so a crash replays:

    http_client.py --port P --stream cam --seed 7 --exchanges 1000
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer
import base64, json, os, random, socket, struct, time

EXTREMES = ["", "0", "-1", "1", "255", "65535", "2147483647", "2147483648", "4294967296", "9223372036854775807",
            "9223372036854775808", "-9223372036854775809", "99999999999999999999999", "1e20", "1e400", "-1e20", "inf", "nan",
            "0x10", "1.5", " ", "%00", "%ff", "..", "/", "é", "\u202e"]
JUNK = [b"", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00" * 8, b"A" * 100000, "é".encode() * 500, b"%n%s%x", b"\r\n\r\n"]
NUMS = [0, -1, 1, 2**31, 2**63 - 1, 2**64, 10**30, 1.5, 1e308, -1e308, None, True, "1", [], {}]

def value(r):
    k = r.randrange(8)
    if k == 0: return r.choice(NUMS)
    if k == 1: return r.choice(EXTREMES)
    if k == 2: return "x" * r.choice([0, 1, 300, 70000])
    if k == 3: return [value(r) for _ in range(r.randrange(4))]
    if k == 4: return {r.choice(["source", "hls", "preview", "record", "depth", "freshness", "a" * 200]): value(r) for _ in range(r.randrange(4))}
    if k == 5: return r.choice(["latest", "max_age", "lossless", "clean", "arrival", "presentation"])
    if k == 6: return r.choice(["testsrc://?size=64x64&fps=1", "rtsp://127.0.0.1:1/x", "file:///etc/passwd", "publish", "exec:rm -rf /", "srt://[::1"])
    return None

def body_json(r):
    keys = ["name", "source", "transport", "preview", "hls", "record", "forward", "title", "ordering", "freshness", "depth", "max_age_ms",
            "watch", "decoders", "policy", "fallback", "on_demand", "read_timeout", "open_timeout", "keywords"]
    obj = {r.choice(keys): value(r) for _ in range(r.randrange(6))}
    if r.random() < 0.2: obj = value(r)
    try:
        raw = json.dumps(obj).encode()
    except (ValueError, OverflowError):
        raw = b"{}"
    if r.random() < 0.15: raw = raw[:r.randrange(len(raw) + 1)]
    if r.random() < 0.1: raw = r.choice(JUNK)
    if r.random() < 0.05: raw = b"[" * 5000 + b"]" * 5000
    return raw

def request(s, r, method, path, body=b"", headers=()):
    what = []
    h = [("Host", "127.0.0.1"), ("Connection", "close")] + list(headers)
    if r.random() < 0.2: h.append(("Authorization", r.choice(["Basic " + base64.b64encode(b"u:p").decode(), "Basic !!!", "Bearer x.y.z", "Digest x", "", "Basic " + "A" * 9000])))
    if r.random() < 0.1: h.append(("Range", "bytes=" + r.choice(EXTREMES) + "-" + r.choice(EXTREMES)))
    if r.random() < 0.1: h[0] = ("Host", r.choice(EXTREMES + ["evil.example", "[::1", "a" * 3000]))
    length = len(body)
    if r.random() < 0.15:
        length = r.choice([0, -1, length + 100, 2**40, 2**63])
        what.append(f"content-length={length}")
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h)
    if body or method in ("POST", "PUT", "PATCH") or length != len(body): head += f"Content-Length: {length}\r\n"
    if r.random() < 0.05: head += "Transfer-Encoding: chunked\r\n"; what.append("chunked lie")
    s.sendall(head.encode("utf-8", "replace") + b"\r\n" + body)
    return what

def websocket(s, r, port, what, stream):
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /api/wall HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    resp = s.recv(4096)
    if b" 101 " not in resp: return
    def frame(opcode, payload, fin=True, lie=None):
        mask = os.urandom(4)
        n = len(payload) if lie is None else lie
        hdr = bytes([(0x80 if fin else 0) | opcode])
        if n < 126: hdr += bytes([0x80 | n])
        elif n < 65536: hdr += bytes([0x80 | 126]) + struct.pack("!H", n)
        else: hdr += bytes([0x80 | 127]) + struct.pack("!Q", n & (2**64 - 1))
        return hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    for _ in range(r.randrange(1, 6)):
        k = r.randrange(10)
        if k < 5:
            msg = {r.choice(["watch", "decoders", "policy", "fallback", "audio", "sizes", "main", "behind", "acks", "x"]): value(r) for _ in range(r.randrange(1, 4))}
            # The page's flow control: a page that acks more than it was sent, or absurd counts.
            if r.random() < 0.2: msg["acks"] = {stream: r.choice([0, 1, 2**63, 2**64 - 1, -1, 1e300, "x"])}
            try: p = json.dumps(msg).encode()
            except (ValueError, OverflowError): p = b"{}"
            s.sendall(frame(1, p)); what.append("ws json")
        elif k == 5: s.sendall(frame(1, r.choice(JUNK)[:60000])); what.append("ws junk text")
        elif k == 6: s.sendall(frame(2, os.urandom(r.randrange(100)))); what.append("ws binary")
        elif k == 7: s.sendall(frame(r.choice([0, 3, 7, 9, 10, 11, 15]), b"x" * r.randrange(200), fin=r.random() < 0.5)); what.append("ws odd opcode")
        elif k == 8: s.sendall(frame(1, b"{}", lie=r.choice([2**63, 2**40, 70000]))); what.append("ws length lies")
        else: s.sendall(frame(8, b"\x03\xe8bye")); what.append("ws close")
        time.sleep(0.01)

def exchange(a, n):
    r = random.Random(f"{a.seed}:{n}")
    what = []
    s = socket.create_connection(("127.0.0.1", a.port), timeout=3)
    s.settimeout(0.3)
    st = a.stream if r.random() < 0.7 else r.choice(EXTREMES + ["nope", "a" * 500, "..%2f..%2fetc"])
    try:
        k = r.randrange(8)
        if k == 0:
            method = r.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"])
            path = r.choice(["/api/streams", f"/api/streams/{st}", f"/api/streams/{st}/sinks/preview", f"/api/streams/{st}/sinks/hls",
                             f"/api/streams/{st}/sinks/" + r.choice(EXTREMES), "/api/events", "/metrics", "/healthz"])
            if method == "POST" and r.random() < 0.5: path = "/api/streams"
            what += [f"{method} {path[:60]}"] + request(s, r, method, path, body_json(r) if method in ("POST", "PUT", "PATCH") else b"",
                                                     [("Content-Type", "application/json")])
        elif k == 1:
            q = "&".join(f"{p}={r.choice(EXTREMES)}" for p in r.sample(["_HLS_msn", "_HLS_part", "_HLS_skip", "token"], r.randrange(1, 4)))
            f = r.choice(["index.m3u8", "init.mp4", "seg0.ts", "part1.0.m4s", "part99999999999999999999.0.m4s", "part-1.-1.m4s",
                          "seg" + r.choice(EXTREMES) + ".m4s", "../../etc/passwd", "%2e%2e/x"])
            path = f"/streams/{st}/hls/{f}?{q}"
            what += [f"GET {path[:80]}"] + request(s, r, "GET", path)
        elif k == 2:
            f = r.choice(["index.m3u8", "seg1.ts", "seg" + r.choice(EXTREMES) + ".ts", "init.mp4", "x.m4s", "a" * 300 + ".ts", ".hidden.ts", "a/b.ts"])
            if f.endswith(".m3u8"):
                body = ("#EXTM3U\n#EXT-X-TARGETDURATION:" + r.choice(EXTREMES) + "\n#EXTINF:" + r.choice(EXTREMES) + ",\nseg1.ts\n").encode()
                if r.random() < 0.5: body += b"#EXT-X-ENDLIST\n"
                if r.random() < 0.3: body = r.choice(JUNK) + body
            else:
                body = r.choice([b"\x47" + os.urandom(187), os.urandom(r.randrange(2000)), b"", b"\x47" * 188 * 20])
            path = f"/ingest/{st}/{f}"
            what += [f"PUT {path[:60]}"] + request(s, r, "PUT", path, body)
        elif k == 3:
            path = r.choice([f"/streams/{st}/snapshot.jpg", f"/streams/{st}/meta.json", f"/streams/{st}/watch", f"/streams/{st}/",
                             "/", "/?only=" + st, "/?freshness=" + r.choice(EXTREMES), "/previews", "//", "/%00", "/" + "a" * 9000])
            what += [f"GET {path[:60]}"] + request(s, r, "GET", path)
        elif k == 4:
            raw = r.choice([b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 500 + b"\r\n", b"\x16\x03\x01\x02\x00", b"GET / HTTP/9.9\r\n\r\n",
                            b"G" * 70000, b"GET " + b"/" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n" * 1000, os.urandom(512)])
            s.sendall(raw); what.append(f"raw {raw[:20]!r}")
        elif k == 6:
            # The archive: find, play back, export, manifest, files, holds, audit, with times,
            # durations, limits, names and Range headers at every extreme.
            def t():
                return r.choice(EXTREMES + ["2026-11-25T14:32:00Z", "2026-11-25T14:32:00.999999999Z", "1970-01-01T00:00:00Z",
                                            "9999-12-31T23:59:59Z", "2026-02-30T25:61:61Z", "2026-11-25T14:32:00+99:99", "now", ""])
            q = "&".join(f"{p}={t() if p != 'duration' and p != 'limit' else r.choice(EXTREMES)}"
                         for p in r.sample(["start", "end", "duration", "since", "limit", "token"], r.randrange(0, 4)))
            f = r.choice(["recording.m3u8", "recording.mp4", "recording.json", "recording/" + st + "-20261125-143200.mp4",
                          "recording/..%2f..%2fcatalog.sqlite", "recording/" + "a" * 400 + ".mp4", "recording/", "recording/%00.mp4"])
            iid = r.choice(EXTREMES + ["1", "2", "0", "999999999999999999999"])
            path = r.choice([f"/streams/{st}/{f}?{q}", f"/api/recordings/{st}?{q}", f"/api/audit?{q}", f"/api/recordings/{st}/holds",
                             f"/api/incidents?{q}&stream={st}&q={r.choice(EXTREMES)}", f"/api/incidents/{iid}", f"/api/incidents/{iid}/export",
                             f"/incidents/{iid}?at={t()}&{q}", f"/api/bookmarks?{q}&stream={st}", "/api/keys"])
            if path.startswith("/api/incidents") or path.startswith("/api/bookmarks"):
                # Incidents and bookmarks: made, changed and searched with every field at its extremes.
                def fields():
                    return {k: r.choice([t(), r.choice(EXTREMES), [st] * r.randrange(0, 80), ["nope", st], "x" * 20000, None, 3, {"a": [1]}])
                            for k in r.sample(["title", "notes", "streams", "start", "end", "state", "stream", "time", "note"], r.randrange(0, 6))}
                method = r.choice(["GET", "POST", "PATCH", "DELETE"])
                if method in ("POST", "PATCH"):
                    target = path.split("?")[0]
                    if method == "POST": target = r.choice(["/api/incidents", "/api/bookmarks"])
                    body = r.choice([body_json(r), json.dumps(fields()).encode(), json.dumps({"title": "t", "streams": [st], "start": t(), "end": t()}).encode()])
                    what += [f"{method} {target[:60]}"] + request(s, r, method, target, body, [("Content-Type", "application/json")])
                else:
                    what += [f"{method} {path[:80]}"] + request(s, r, method, path)
            elif path.endswith("/holds") and r.random() < 0.6:
                body = r.choice([body_json(r), json.dumps({"start": t(), "end": t(), "reason": r.choice(["", "x" * 5000, "case 1"])}).encode()])
                what += [f"POST {path[:60]}"] + request(s, r, "POST", path, body, [("Content-Type", "application/json")])
            elif path.endswith("/holds") and r.random() < 0.5:
                path += "/" + r.choice(EXTREMES)
                what += [f"DELETE {path[:60]}"] + request(s, r, "DELETE", path)
            else:
                h = [("Range", "bytes=" + r.choice(EXTREMES + [""]) + "-" + r.choice(EXTREMES + [""]))] if r.random() < 0.6 else []
                what += [f"GET {path[:80]}"] + request(s, r, r.choice(["GET", "GET", "HEAD"]), path, b"", h)
        elif k == 7:
            # Talk back: offers with every line at its extremes, the floor asked for and let go.
            lines = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0", "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0",
                     "a=mid:0", "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuvwx",
                     "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), "a=setup:actpass", "a=sendonly", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2"]
            for _ in range(r.randrange(0, 5)):
                i = r.randrange(len(lines))
                lines[i] = r.choice([lines[i].split(":")[0] + ":" + r.choice(EXTREMES), "", lines[i] * 50, "m=audio " + r.choice(EXTREMES) + " RTP/AVP " + r.choice(EXTREMES),
                                     "a=rtpmap:111 opus/" + r.choice(EXTREMES), "a=recvonly", r.choice(JUNK).decode("latin-1")])
            if r.random() < 0.2: lines += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=sendonly", "a=rtpmap:111 opus/48000/2"] * r.randrange(1, 300)
            method = r.choice(["POST", "POST", "GET", "DELETE", "OPTIONS"])
            path = f"/streams/{st}/talk" + ("/" + r.choice(EXTREMES) if method == "DELETE" else "")
            body = "\r\n".join(lines).encode("utf-8", "replace") if method == "POST" else b""
            what += [f"{method} {path[:60]}"] + request(s, r, method, path, body, [("Content-Type", r.choice(["application/sdp", "application/sdp", "text/plain"]))])
        else:
            websocket(s, r, a.port, what, a.stream)
        try:
            while s.recv(65536): pass
        except socket.timeout:
            pass
    except OSError:
        pass
    finally:
        s.close()
    peer.say(a, n, what)

def main():
    a = peer.arguments(extra=())
    peer.run(a, exchange)

if __name__ == "__main__":
    main()
