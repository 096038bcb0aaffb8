#!/usr/bin/python3
"""A hostile RTMP publisher against LiveRelay's one-port RTMP ingest, mutated from a seed.

Each exchange is one connection: a valid handshake, then connect / createStream / publish and a
few seconds' worth of FLV video and audio tags (a real H.264 + AAC capture made by ffmpeg) as
RTMP chunks -- with chunk headers (format, chunk stream id, timestamps, lengths, type ids),
AMF0 values (string lengths, nesting, numbers at NaN/inf/extremes) and tag bodies (AVC sequence
headers, NAL lengths, composition times, AAC configs) broken from random.Random(f"{seed}:{n}").
One line per exchange says what it sent, so a crash replays:

    rtmp_publisher.py --port P --stream phone --key K --seed 7 --exchanges 1000
"""
import argparse, os, random, socket, struct, subprocess, tempfile, time

def amf_string(s): b = s.encode(); return b"\x02" + struct.pack("!H", len(b)) + b
def amf_number(x): return b"\x00" + struct.pack("!d", x)
def amf_object(d):
    out = b"\x03"
    for k, v in d.items():
        kb = k.encode(); out += struct.pack("!H", len(kb)) + kb + v
    return out + b"\x00\x00\x09"

def flv_tags(path):
    data = open(path, "rb").read()
    i, tags = 13, []
    while i + 11 <= len(data):
        t = data[i]; n = int.from_bytes(data[i+1:i+4], "big")
        ts = int.from_bytes(data[i+4:i+7], "big") | (data[i+7] << 24)
        tags.append((t, ts, data[i+11:i+11+n])); i += 11 + n + 4
    return tags

class Publisher:
    def __init__(self, a):
        self.a = a
        d = tempfile.mkdtemp(prefix="hostile-rtmp")
        path = os.path.join(d, "a.flv")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=15", "-f", "lavfi", "-i", "sine=f=440:r=44100",
                        "-t", "2", "-c:v", "libx264", "-x264-params", "keyint=15:scenecut=0", "-bf", "0", "-c:a", "aac", "-f", "flv", path], check=True)
        self.tags = flv_tags(path)

    def chunks(self, r, hit, what, csid, typ, ts, stream, payload, size=128):
        fmt = 0
        if hit(): fmt = r.choice([1, 2, 3]); what.append(f"first chunk fmt {fmt}")
        if hit(): csid = r.choice([2, 63, 64, 319, 320, 65599]); what.append(f"csid {csid}")
        length = len(payload)
        if hit(): length = r.choice([0, 1, 0xFFFFFF, length + 500, max(0, length - 7)]); what.append(f"length {length}")
        if hit(): typ = r.choice([0, 1, 2, 3, 4, 5, 6, 7, 15, 16, 17, 18, 19, 22, 255]); what.append(f"type {typ}")
        ext = ts >= 0xFFFFFF or (hit() and r.random() < 0.3)
        def basic(f):
            if csid < 64: return bytes([(f << 6) | csid])
            if csid < 320: return bytes([(f << 6) | 0, csid - 64])
            return bytes([(f << 6) | 1]) + struct.pack("<H", (csid - 64) & 0xFFFF)
        hdr = basic(fmt)
        t = 0xFFFFFF if ext else ts
        if fmt == 0: hdr += t.to_bytes(3, "big") + (length & 0xFFFFFF).to_bytes(3, "big") + bytes([typ]) + struct.pack("<I", stream)
        elif fmt == 1: hdr += t.to_bytes(3, "big") + (length & 0xFFFFFF).to_bytes(3, "big") + bytes([typ])
        elif fmt == 2: hdr += t.to_bytes(3, "big")
        if ext and fmt != 3: hdr += struct.pack("!I", ts & 0xFFFFFFFF)
        out = hdr + payload[:size]
        for off in range(size, len(payload), size):
            out += basic(3) + payload[off:off+size]
        return out

    def exchange(self, n):
        a = self.a
        r = random.Random(f"{a.seed}:{n}")
        hit = lambda: r.random() < a.mutate
        what = []
        s = socket.create_connection(("127.0.0.1", a.port), timeout=3)
        s.settimeout(2)
        try:
            c1 = bytes(1536)
            s.sendall(b"\x03" + c1)
            got = b""
            while len(got) < 1 + 1536 * 2:
                b = s.recv(8192)
                if not b: return what + ["closed during handshake"]
                got += b
            s.sendall(got[1:1537])
            s.settimeout(0.05)
            # connect
            num = 1.0
            if hit(): num = r.choice([float("nan"), float("inf"), -1e308, 2.0**64]); what.append(f"txn {num}")
            app = "live" if not hit() else r.choice(["", "live/" + "x" * 300, "\xff", "live?key=" + "k" * 5000]); 
            if app != "live": what.append(f"app {app[:30]!r}")
            conn = amf_string("connect") + amf_number(num) + amf_object({"app": amf_string(app), "tcUrl": amf_string(f"rtmp://127.0.0.1:{a.port}/{app}"),
                                                                         "flashVer": amf_string("FMLE/3.0"), "type": amf_string("nonprivate")})
            if hit():
                k = r.randrange(4)
                if k == 0: conn = conn[:r.randrange(len(conn))]; what.append("connect truncated")
                elif k == 1: conn = amf_string("connect") + amf_number(1) + b"\x03" * 2000; what.append("deep objects")
                elif k == 2: conn = amf_string("connect") + b"\x02\xff\xff" + b"a" * 10; what.append("string length lies")
                else: conn = amf_string("connect") + amf_number(1) + bytes([r.randrange(256)]) + os.urandom(40); what.append("odd amf marker")
            out = b""
            if hit():
                size = r.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 65536]); out += self.chunks(r, lambda: False, what, 2, 1, 0, 0, struct.pack("!I", size)); what.append(f"set chunk size {size}")
            out += self.chunks(r, hit, what, 3, 20, 0, 0, conn)
            out += self.chunks(r, hit, what, 3, 20, 0, 0, amf_string("createStream") + amf_number(2) + b"\x05")
            name = a.stream + (f"?key={a.key}" if a.key else "")
            if hit(): name = r.choice(["", a.stream, "x" * 3000, "../" + a.stream, a.stream + "?key=" + "\xff", a.stream + "?user=u&pass=p"]); what.append(f"name {name[:30]!r}")
            out += self.chunks(r, hit, what, 8, 20, 0, 1, amf_string("publish") + amf_number(3) + b"\x05" + amf_string(name) + amf_string("live"))
            s.sendall(out)
            time.sleep(0.05)
            for (t, ts, body) in self.tags[: r.randrange(10, len(self.tags))]:
                body = bytearray(body)
                if hit():
                    k = r.randrange(7)
                    if k == 0 and len(body) > 5: body[1] = r.choice([0, 1, 2, 255]); what.append("avc packet type")
                    elif k == 1 and len(body) > 9: body[5:9] = struct.pack("!I", r.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, len(body) * 3])); what.append("nal length lies")
                    elif k == 2 and len(body) > 4: body[2:5] = r.choice([b"\xff\xff\xff", b"\x80\x00\x00", b"\x7f\xff\xff"]); what.append("composition time")
                    elif k == 3: body = body[:r.randrange(len(body) + 1)]; what.append("tag truncated")
                    elif k == 4 and len(body) > 0: body[0] = r.randrange(256); what.append(f"codec byte {body[0]}")
                    elif k == 5: ts = r.choice([0, 0xFFFFFF, 0xFFFFFFFF, 0x7FFFFFFF]); what.append(f"ts {ts}")
                    else: body += os.urandom(r.randrange(64)); what.append("tail junk")
                s.sendall(self.chunks(r, lambda: r.random() < a.mutate / 4, what, 4 if t == 8 else 6, t, ts & 0xFFFFFFFF, 1, bytes(body)))
            try:
                while s.recv(65536): pass
            except (socket.timeout, OSError): pass
        except OSError:
            pass
        finally:
            s.close()
        return what

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--stream", default="phone")
    p.add_argument("--key", default="")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mutate", type=float, default=0.2)
    p.add_argument("--exchanges", type=int, default=100)
    a = p.parse_args()
    pub = Publisher(a)
    for n in range(1, a.exchanges + 1):
        try:
            what = pub.exchange(n)
        except OSError as e:
            what = [f"could not connect: {e}"]; time.sleep(0.2)
        print(f"exchange {n} seed {a.seed}: " + ("; ".join(sorted(set(what))) or "plain"), flush=True)
    print(f"done: {a.exchanges} exchanges", flush=True)

if __name__ == "__main__":
    main()
