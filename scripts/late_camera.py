#!/usr/bin/python3
"""An RTSP camera whose port and DESCRIBE answer before its media flows, as a booting camera or
an upstream relay whose own source is not back yet does. For the reconnect tests.

OPTIONS, DESCRIBE, SETUP (RTP interleaved in the connection, or UDP) and PLAY are answered 200
from the start, with the SDP of the H.264 stream it will send (320x240, 30 fps, a keyframe every
half second; made once with ffmpeg). Its media flows only --late seconds after the camera
started; a PLAY before then gets, by --mode:

    withhold   no media on that session until the camera serves, then media from a keyframe
    close      the connection closed right after PLAY's answer (the stream ends at once)
    keyframe   one picture (a keyframe: a relay's cached picture, an encoder's first), then
               the connection closed

    late_camera.py --port P --late 1 --mode close

Prints "ready" once listening, "before serving: MODE" for each PLAY before its media flows,
"serving T" (T: when its media began to flow on the monotonic clock, seconds) and "played N D"
for each session that sends media, D seconds after the camera began to serve.
"""
import argparse, base64, os, socket, struct, subprocess, sys, tempfile, threading, time

_said = threading.Lock()


def say(line):
    """One whole line to stdout: `print` writes the text and its newline apart, so two threads'
    lines could run together ("played 2 0.000serving 62858.5") and the test miss one."""
    with _said:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


FPS = 30


def access_units(path):
    """The pictures of an Annex B file, each with the parameter sets and SEI before it."""
    data = open(path, "rb").read()
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    nals = []
    for k, s in enumerate(starts):
        e = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        nals.append(data[s:e].rstrip(b"\x00"))
    aus, cur = [], []
    for nal in nals:
        if not nal:
            continue
        cur.append(nal)
        if nal[0] & 0x1F in (1, 5):
            aus.append(cur)
            cur = []
    sps = next(n for n in nals if n and n[0] & 0x1F == 7)
    pps = next(n for n in nals if n and n[0] & 0x1F == 8)
    return aus, sps, pps


class Camera:
    def __init__(self, a):
        self.a = a
        path = os.path.join(tempfile.mkdtemp(prefix="late-camera"), "v.264")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc2=size=320x240:rate={FPS}", "-t", "2",
                        "-c:v", "libx264", "-profile:v", "baseline", "-tune", "zerolatency",
                        "-x264-params", f"keyint={FPS // 2}:scenecut=0", "-f", "h264", path], check=True)
        self.aus, sps, pps = access_units(path)
        self.sprop = base64.b64encode(sps).decode() + "," + base64.b64encode(pps).decode()
        self.profile = sps[1:4].hex()
        self.start = time.monotonic()

    def flowing(self):
        return time.monotonic() - self.start >= self.a.late

    def reply(self, conn, cseq, headers=(), body=b""):
        out = f"RTSP/1.0 200 OK\r\nCSeq: {cseq}\r\n"
        for k, v in headers:
            out += f"{k}: {v}\r\n"
        if body:
            out += f"Content-Length: {len(body)}\r\n"
        conn.sendall(out.encode() + b"\r\n" + body)

    def serve(self, conn, n):
        conn.settimeout(30)
        buf, tracks = b"", []
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, uri = (lines[0].split(" ") + ["", ""])[:2]
                hdr = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        hdr[k.strip().lower()] = v.strip()
                cseq = hdr.get("cseq", "0")
                if method == "OPTIONS":
                    self.reply(conn, cseq, [("Public", "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER")])
                elif method == "DESCRIBE":
                    sdp = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=late camera\r\nt=0 0\r\na=control:*\r\n"
                           "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
                           f"a=fmtp:96 packetization-mode=1;profile-level-id={self.profile};sprop-parameter-sets={self.sprop}\r\n"
                           "a=control:trackID=0\r\n")
                    self.reply(conn, cseq, [("Content-Type", "application/sdp"), ("Content-Base", uri.rstrip("/") + "/")], sdp.encode())
                elif method == "SETUP":
                    t = hdr.get("transport", "")
                    if "TCP" in t.upper():
                        tracks.append(("tcp", 0))
                        spec = "RTP/AVP/TCP;unicast;interleaved=0-1"
                    else:
                        ports = t.split("client_port=")[1].split(";")[0] if "client_port=" in t else "0-1"
                        tracks.append(("udp", int(ports.split("-")[0])))
                        spec = f"RTP/AVP;unicast;client_port={ports};server_port=6970-6971"
                    self.reply(conn, cseq, [("Transport", spec), ("Session", "4f3c2a1b;timeout=60")])
                elif method == "PLAY":
                    self.reply(conn, cseq, [("Session", "4f3c2a1b"), ("RTP-Info", f"url={uri};seq=1000;rtptime=0")])
                    self.play(conn, tracks, n)
                    return
                else:
                    self.reply(conn, cseq, [("Session", "4f3c2a1b")])
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def play(self, conn, tracks, n):
        pictures = None
        if not self.flowing():
            say(f"before serving: {self.a.mode}")
            if self.a.mode == "close":
                return
            if self.a.mode == "keyframe":
                pictures = 1
            else:
                while not self.flowing():
                    time.sleep(0.005)
        if pictures is None:
            say(f"played {n} {time.monotonic() - self.start - self.a.late:.3f}")
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        seq, ssrc, k = 1000, 0x1234ABCD, 0
        origin = time.monotonic()
        try:
            while pictures is None or k < pictures:
                au = self.aus[k % len(self.aus)]
                ts = (k * (90000 // FPS)) & 0xFFFFFFFF
                for ni, nal in enumerate(au):
                    if len(nal) <= 1200:
                        chunks = [nal]
                    else:
                        ind, typ, body = (nal[0] & 0xE0) | 28, nal[0] & 0x1F, nal[1:]
                        chunks = [bytes([ind, (0x80 if off == 0 else 0) | (0x40 if off + 1200 >= len(body) else 0) | typ]) + body[off:off + 1200]
                                  for off in range(0, len(body), 1200)]
                    for ci, payload in enumerate(chunks):
                        marker = ni == len(au) - 1 and ci == len(chunks) - 1
                        pkt = struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | 96, seq & 0xFFFF, ts, ssrc) + payload
                        seq += 1
                        for kind, dest in tracks:
                            if kind == "tcp":
                                conn.sendall(struct.pack("!BBH", 0x24, 0, len(pkt)) + pkt)
                            elif dest:
                                udp.sendto(pkt, ("127.0.0.1", dest))
                k += 1
                time.sleep(max(0.0, origin + k / FPS - time.monotonic()))
            if pictures is not None:
                time.sleep(0.1)  # the picture is taken, then the end
        finally:
            udp.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--late", type=float, default=1.0, help="seconds from start until media flows")
    p.add_argument("--mode", default="close", choices=["withhold", "close", "keyframe"])
    a = p.parse_args()
    cam = Camera(a)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", a.port))
    srv.listen(64)
    cam.start = time.monotonic()
    say("ready")

    def announce():
        time.sleep(max(0.0, cam.start + a.late - time.monotonic()))
        say(f"serving {cam.start + a.late:.6f}")
    threading.Thread(target=announce, daemon=True).start()
    n = 0
    while True:
        conn, _ = srv.accept()
        n += 1
        threading.Thread(target=cam.serve, args=(conn, n), daemon=True).start()


if __name__ == "__main__":
    main()
