#!/usr/bin/python3
"""A hostile RTSP camera: plausible answers and RTP, mutated from a seed.

Every TCP connection is one exchange: OPTIONS, DESCRIBE, SETUP per track, PLAY, then H.264 (or
H.265, RFC 7798, on a path that contains "h265") over RTP (interleaved on the connection, or UDP to the client's ports) for a moment, then the camera
hangs up so the client comes back. With --mutate, each exchange draws from
random.Random(f"{seed}:{n}") which fields to break -- numbers at their extremes, empty, huge and
non-UTF-8 values, lying lengths -- and prints one line saying what it sent, so a crash replays:

    camera.py --port P --seed 7 --mutate 0.3           # hostile
    camera.py --port P --session-timeout 1e20          # one broken field, every exchange
    camera.py --port P --boot-delay 2 --boot-mode stall # port open, serving only after 2 s
"""
import argparse, os, random, socket, struct, subprocess, sys, tempfile, threading, time

EXTREMES = ["", "0", "-1", "1", "65535", "65536", "2147483647", "2147483648", "4294967295", "4294967296",
            "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999999",
            "1e20", "1e400", "-1e20", "inf", "-inf", "nan", "NaN", "0x7fffffff", "1.5", "-0", "+5", " ", "=", ";", ",", "-", "--"]
JUNK = [b"", b"\xff\xfe\xfd", b"\xc3", b"\xed\xa0\x80", b"\x00" * 8, b"A" * 70000, "é".encode() * 300, b"%s%n", b"\r\n\r\n"]

def nal_type(nal, hevc):
    return (nal[0] >> 1) & 0x3F if hevc else nal[0] & 0x1F

def access_units(path, hevc=False):
    data = open(path, "rb").read()
    # split Annex B into NAL units, group per access unit (a VCL NAL ends one)
    nals, i, n = [], 0, len(data)
    starts = []
    while i < n - 3:
        if data[i] == 0 and data[i+1] == 0 and (data[i+2] == 1 or (data[i+2] == 0 and i + 3 < n and data[i+3] == 1)):
            sc = 3 if data[i+2] == 1 else 4
            starts.append((i, i + sc)); i += sc
        else:
            i += 1
    for k, (s, b) in enumerate(starts):
        e = starts[k+1][0] if k + 1 < len(starts) else n
        nals.append(data[b:e])
    aus, cur = [], []
    for nal in nals:
        if not nal: continue
        cur.append(nal)
        if (nal_type(nal, hevc) < 32) if hevc else (nal[0] & 0x1F in (1, 5)):
            aus.append(cur); cur = []
    sets = {k: [x for x in nals if x and nal_type(x, hevc) == k][:1] for k in ((32, 33, 34) if hevc else (7, 8))}
    return aus, sets

class Camera:
    def __init__(self, a):
        self.a = a
        self.start = time.monotonic()
        d = tempfile.mkdtemp(prefix="hostile-camera")
        path = os.path.join(d, "v.264")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-t", "2",
                        "-c:v", "libx264", "-profile:v", "baseline", "-x264-params", "keyint=10:scenecut=0",
                        "-slices", "2", "-f", "h264", path], check=True)
        self.aus, sets = access_units(path)
        import base64
        self.sprop = base64.b64encode(sets[7][0]).decode() + "," + base64.b64encode(sets[8][0]).decode()
        self.profile = sets[7][0][1:4].hex()
        path = os.path.join(d, "v.265")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-t", "2", "-pix_fmt", "yuv420p",
                        "-c:v", "libx265", "-x265-params", "keyint=10:scenecut=0:log-level=error", "-f", "hevc", path], check=True)
        self.aus265, sets = access_units(path, hevc=True)
        self.sprop265 = {k: base64.b64encode(sets[t][0]).decode() for k, t in (("vps", 32), ("sps", 33), ("pps", 34))}
        self.count = 0
        self.lock = threading.Lock()

    def log(self, n, what):
        with self.lock: self.count += 1
        print(f"exchange {n} seed {self.a.seed}: " + ("; ".join(what) or "plain"), flush=True)

    def serving(self):
        return time.monotonic() - self.start >= self.a.boot_delay

    def serve(self, conn, n):
        r = random.Random(f"{self.a.seed}:{n}") if self.a.mutate > 0 else None
        hit = lambda: r is not None and r.random() < self.a.mutate
        what = []
        conn.settimeout(10)
        buf = b""
        session = "4f3c2a1b"
        tracks = {}
        stalled = False
        requests = 0
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk: return
                    buf += chunk
                    if len(buf) > 1 << 20: return
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, uri = (lines[0].split(" ") + ["", ""])[:2]
                requests += 1
                hdr = {}
                for l in lines[1:]:
                    if ":" in l:
                        k, v = l.split(":", 1); hdr[k.strip().lower()] = v.strip()
                cseq = hdr.get("cseq", "0")
                if not self.serving() and method in ("DESCRIBE", "SETUP", "PLAY"):
                    mode = self.a.boot_mode
                    if mode == "stall":
                        stalled = True
                        time.sleep(60); return
                    if mode in ("404", "503"):
                        self.reply(conn, cseq, [], b"", status=f"{mode} {'Not Found' if mode == '404' else 'Service Unavailable'}"); continue
                    if mode == "nomedia":
                        self.reply(conn, cseq, [("Content-Type", "application/sdp")], b"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=boot\r\nt=0 0\r\n"); continue
                status = "200 OK"
                headers, body = [], b""
                if method == "OPTIONS":
                    headers = [("Public", "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER")]
                elif method == "DESCRIBE":
                    hevc = "h265" in uri
                    clock, pt, sprop, ctl = "90000", "96", self.sprop, "trackID=0"
                    extra = ""
                    if hit(): clock = r.choice(EXTREMES); what.append(f"clock={clock!r}")
                    if hit(): pt = r.choice(EXTREMES); what.append(f"pt={pt!r}")
                    if hit(): sprop = r.choice(["", "====", "Z0LAHtkA,", "!!!!", "A" * 5000, ",,,,", sprop[:7]]); what.append(f"sprop={sprop[:40]!r}")
                    if hit(): ctl = r.choice(["", "*", "rtsp://", "rtsp://127.0.0.1:1/x", "../../x", "a" * 3000]); what.append(f"control={ctl[:40]!r}")
                    if hit():
                        extra = "".join(f"m=video 0 RTP/AVP {96+k}\r\na=rtpmap:{96+k} H264/90000\r\na=control:t{k}\r\n" for k in range(r.choice([2, 17, 200])))
                        what.append(f"extra media sections={extra.count('m=')}")
                    if hit(): extra += "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 MPEG4-GENERIC/" + r.choice(EXTREMES) + "/2\r\na=fmtp:97 streamtype=5;mode=AAC-hbr;sizelength=" + r.choice(EXTREMES) + ";indexlength=3;indexdeltalength=3;config=" + r.choice(["1190", "", "zz", "1" * 999]) + "\r\na=control:trackID=1\r\n"; what.append("aac section")
                    if hevc:
                        sets = dict(self.sprop265)
                        if hit(): k = r.choice(list(sets)); sets[k] = r.choice(["", "====", "QAEM", "!!!!", "A" * 5000, ",,,,", sets[k][:5]]); what.append(f"sprop-{k}={sets[k][:40]!r}")
                        fmtp = ";".join(f"sprop-{k}={v}" for k, v in sets.items())
                        if hit(): fmtp += ";sprop-max-don-diff=" + r.choice(EXTREMES); what.append("max-don-diff")
                        video = f"m=video 0 RTP/AVP {pt}\r\na=rtpmap:{pt} H265/{clock}\r\na=fmtp:{pt} {fmtp}\r\n"
                    else:
                        video = (f"m=video 0 RTP/AVP {pt}\r\na=rtpmap:{pt} H264/{clock}\r\n"
                                 f"a=fmtp:{pt} packetization-mode=1;profile-level-id={self.profile};sprop-parameter-sets={sprop}\r\n")
                    if "backchannel" in hdr.get("require", ""):
                        # An ONVIF backchannel (talk back): its section mutated like the rest, or
                        # the requirement refused.
                        if hit(): self.reply(conn, cseq, [("Unsupported", "www.onvif.org/ver20/backchannel")], b"", status="551 Option not supported"); what.append("backchannel refused"); continue
                        enc, bpt, brate, bfmtp = r.choice([("PCMU", "0", "8000", ""), ("PCMA", "8", "8000", ""),
                                                           ("MPEG4-GENERIC", "96", "16000", "a=fmtp:96 streamtype=5;mode=AAC-hbr;config=1408;sizelength=13;indexlength=3;indexdeltalength=3\r\n")])
                        if hit(): brate = r.choice(EXTREMES); what.append(f"backchannel rate={brate!r}")
                        if hit(): bpt = r.choice(EXTREMES); what.append(f"backchannel pt={bpt!r}")
                        if hit(): bfmtp = f"a=fmtp:{bpt} mode=" + r.choice(["AAC-hbr", "", "x" * 999]) + ";sizelength=" + r.choice(EXTREMES) + ";config=" + r.choice(["1408", "", "zz", "1" * 999, "14"]) + "\r\n"; what.append("backchannel fmtp")
                        extra += (f"m=audio 0 RTP/AVP {bpt}\r\na=rtpmap:{bpt} {enc}/{brate}" + r.choice(["", "/1", "/2", "/" + r.choice(EXTREMES)])
                                  + f"\r\n{bfmtp}a=control:back\r\n" + r.choice(["a=sendonly\r\n", "a=sendonly\r\n", "a=recvonly\r\n", "a=sendonly\r\na=sendonly\r\n"]))
                        what.append(f"backchannel {enc}")
                    sdp = (f"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=hostile\r\nt=0 0\r\na=control:*\r\n"
                           + video + f"a=control:{ctl}\r\n" + extra)
                    body = sdp.encode()
                    if hit(): body = body + r.choice(JUNK); what.append("junk after SDP")
                    headers = [("Content-Type", "application/sdp"), ("Content-Base", uri + "/")]
                elif method == "SETUP":
                    t = hdr.get("transport", "")
                    track = len(tracks)
                    sess = session + ";timeout=60"
                    if self.a.session_timeout is not None: sess = session + ";timeout=" + self.a.session_timeout
                    if hit():
                        sess = r.choice([session + ";timeout=" + r.choice(EXTREMES), "", ";timeout=5", session + ";timeout", session + ";;;=;", "x" * 5000])
                        what.append(f"session={sess[:60]!r}")
                    if "TCP" in t.upper():
                        ch = (track * 2, track * 2 + 1)
                        rt = f"RTP/AVP/TCP;unicast;interleaved={ch[0]}-{ch[1]}"
                        tracks[track] = ("tcp", ch)
                    else:
                        cp = t.split("client_port=")[1].split(";")[0].split("-") if "client_port=" in t else ["0"]
                        port = int(cp[0]) if cp[0].isdigit() else 0
                        rt = f"RTP/AVP;unicast;client_port={'-'.join(cp)};server_port=6970-6971;ssrc=1234ABCD"
                        tracks[track] = ("udp", port)
                    if hit():
                        rt = r.choice(["", "RTP/AVP/TCP;interleaved=" + r.choice(EXTREMES), "RTP/AVP;server_port=" + r.choice(EXTREMES),
                                       "RTP/AVP;server_port=65535", "RTP/AVP;source=" + "a" * 400, ";;;", "RTP/AVP;ssrc=" + r.choice(EXTREMES)])
                        what.append(f"transport={rt[:60]!r}")
                    headers = [("Transport", rt), ("Session", sess)]
                elif method == "PLAY":
                    headers = [("Session", session), ("RTP-Info", f"url={uri};seq=1;rtptime=0")]
                    if hit(): headers = [("Session", session), ("RTP-Info", r.choice(EXTREMES) * 3)]; what.append("rtp-info")
                elif method in ("GET_PARAMETER", "TEARDOWN", "SET_PARAMETER"):
                    headers = [("Session", session)]
                else:
                    status = "405 Method Not Allowed"
                if hit():
                    kind = r.randrange(6)
                    if kind == 0: status = r.choice(["0 X", "99999999999999999999 OK", "200", "-200 OK", "2OO OK", "\xff OK"]); what.append(f"status={status!r}")
                    elif kind == 1: headers.append(("Content-Length", r.choice(EXTREMES))); what.append("content-length lies")
                    elif kind == 2: headers.append(("CSeq", r.choice(EXTREMES))); what.append("second cseq")
                    elif kind == 3: headers += [(f"X-{k}", "v") for k in range(r.choice([100, 3000]))]; what.append("many headers")
                    # A challenge ends the exchange with a credentials error (the client backs off
                    # for it, rightly): rarer than the rest, so that a long run keeps exchanging.
                    elif kind == 4 and r.random() < 0.25: headers.append(("WWW-Authenticate", "Digest realm=\"" + r.choice(EXTREMES) + "\", nonce=\"\", algorithm=" + r.choice(["MD5", "SHA-256", ""]))); status = "401 Unauthorized"; what.append("auth challenge")
                    else: headers.append(("X-Junk", r.choice(JUNK).decode("latin-1"))); what.append("junk header")
                self.reply(conn, cseq, headers, body, status=status)
                if method == "PLAY":
                    self.media(conn, tracks, r, hit, what, n, hevc="h265" in uri)
                    if self.a.hangup == "silent":
                        # Silent but connected: the client's read deadline ends the session.
                        conn.settimeout(10)
                        while conn.recv(65536): pass
                    return
        except (OSError, ValueError, IndexError):
            pass
        finally:
            if stalled: what.append("stalled (booting)")
            # A connection with no request (a reachability knock) is no exchange.
            if requests: self.log(n, what)
            try: conn.close()
            except OSError: pass

    def reply(self, conn, cseq, headers, body, status="200 OK"):
        out = f"RTSP/1.0 {status}\r\nCSeq: {cseq}\r\n"
        have_length = any(k.lower() == "content-length" for k, _ in headers)
        for k, v in headers: out += f"{k}: {v}\r\n"
        if body and not have_length: out += f"Content-Length: {len(body)}\r\n"
        conn.sendall(out.encode("latin-1", "replace") + b"\r\n" + body)

    def media(self, conn, tracks, r, hit, what, n, hevc=False):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        seq, ssrc = 1000, 0x1234ABCD
        end = time.monotonic() + self.a.play_seconds
        k = 0
        sent = []
        try:
            while time.monotonic() < end:
                aus = self.aus265 if hevc else self.aus
                au = aus[k % len(aus)]
                ts = (k * 9000) & 0xFFFFFFFF
                k += 1
                for ni, nal in enumerate(au):
                    last = ni == len(au) - 1
                    chunks = [nal] if len(nal) <= 1200 else None
                    if chunks is None:
                        # FU-A (H.264), or an H.265 fragmentation unit (type 49, RFC 7798 §4.4.3).
                        head = bytes([(nal[0] & 0x81) | (49 << 1), nal[1]]) if hevc else bytes([(nal[0] & 0xE0) | 28])
                        hdr = nal_type(nal, hevc)
                        body = nal[2:] if hevc else nal[1:]
                        chunks = []
                        for off in range(0, len(body), 1200):
                            piece = body[off:off+1200]
                            s = 0x80 if off == 0 else 0
                            e = 0x40 if off + 1200 >= len(body) else 0
                            chunks.append(head + bytes([s | e | hdr]) + piece)
                    for ci, payload in enumerate(chunks):
                        marker = last and ci == len(chunks) - 1
                        b0, b1 = 0x80, (0x80 if marker else 0) | 96
                        pkt = bytearray(struct.pack("!BBHII", b0, b1, seq & 0xFFFF, ts, ssrc) + payload)
                        seq += 1
                        if hit():
                            m = r.randrange(8)
                            if m == 0: pkt[0] |= 0x20; pkt[-1] = 255; sent.append("padding lies")
                            elif m == 1: pkt[0] |= 0x10; pkt[12:12] = b"\xbe\xde" + struct.pack("!H", r.choice([0, 1, 0xFFFF])); sent.append("extension lies")
                            elif m == 2: pkt[0] = (pkt[0] & 0xF0) | 15; sent.append("csrc count 15")
                            elif m == 3: pkt = pkt[:r.randrange(0, 14)]; sent.append(f"truncated to {len(pkt)}")
                            elif m == 4: struct.pack_into("!H", pkt, 2, r.randrange(65536)); sent.append("seq jump")
                            elif m == 5: struct.pack_into("!I", pkt, 4, r.choice([0, 0xFFFFFFFF, 0x80000000])); sent.append("ts extreme")
                            elif m == 6 and len(pkt) > 13 and hevc: pkt[12] = (r.choice([48, 49, 50, 0, 63, 32, 19]) << 1) | (pkt[12] & 0x81); sent.append(f"nal type {(pkt[12] >> 1) & 63}")
                            elif m == 6 and len(pkt) > 13: pkt[12] = r.choice([24, 25, 26, 27, 28, 29, 30, 31, 0]) | (pkt[12] & 0xE0); sent.append(f"nal type {pkt[12] & 31}")
                            else: pkt += bytes(r.randrange(256) for _ in range(r.randrange(64))); sent.append("tail junk")
                        for t, (kind, dest) in tracks.items():
                            if kind == "tcp":
                                length = len(pkt)
                                if hit() and r.random() < 0.2: length = r.choice([0, 65535, length + 100]); sent.append(f"interleaved length {length}")
                                conn.sendall(struct.pack("!BBH", 0x24, dest[0], length & 0xFFFF) + bytes(pkt))
                            elif dest:
                                udp.sendto(bytes(pkt), ("127.0.0.1", dest))
                            break
                        if hit() and r.random() < 0.1:
                            sr = struct.pack("!BBHIIIIII", 0x80, 200, 6, ssrc, r.randrange(1 << 32), r.randrange(1 << 32), r.randrange(1 << 32), 0, 0)
                            if r.random() < 0.5: sr = sr[:r.randrange(len(sr))]
                            for t, (kind, dest) in tracks.items():
                                if kind == "tcp": conn.sendall(struct.pack("!BBH", 0x24, dest[1], len(sr)) + sr)
                            sent.append("rtcp sr")
                time.sleep(0.1)
        finally:
            udp.close()
            if sent: what.append("media: " + ", ".join(sorted(set(sent))))

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mutate", type=float, default=0.0)
    p.add_argument("--session-timeout")
    p.add_argument("--boot-delay", type=float, default=0.0)
    p.add_argument("--boot-mode", default="stall", choices=["stall", "404", "503", "nomedia"])
    p.add_argument("--play-seconds", type=float, default=3600.0)
    p.add_argument("--hangup", default="close", choices=["close", "silent"], help="after --play-seconds: hang up, or fall silent")
    p.add_argument("--exchanges", type=int, default=0, help="exit after this many connections (0: never)")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    cam = Camera(a)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", a.port))
    srv.listen(64)
    cam.start = time.monotonic()
    print("ready", flush=True)
    n = 0
    while a.exchanges == 0 or cam.count < a.exchanges:
        srv.settimeout(1)
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        n += 1
        threading.Thread(target=cam.serve, args=(conn, n), daemon=True).start()
    time.sleep(min(a.play_seconds, 2) + 0.5)
    print(f"done: {cam.count} exchanges ({n} connections)", flush=True)

if __name__ == "__main__":
    main()
