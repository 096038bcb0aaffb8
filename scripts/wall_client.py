#!/usr/bin/python3
"""A viewer of LiveRelay's ops-wall WebSocket (/api/wall) without a browser, optionally on a
slow link: it reads at most --rate-kbit (with a small receive buffer, so TCP pushes back as a
thin VPN would). Prints "watching" once frames flow, then one JSON line: frames, keyframes,
bytes, the age of each frame on arrival here (from the server's arrival stamp; same clock),
and the server's counters for this viewer's tile.

  wall_client.py PORT STREAM [--seconds 10] [--rate-kbit 500] [--decoders avc1] [--policy JSON]
"""
import argparse, base64, json, os, socket, struct, sys, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("stream")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate-kbit", type=float, default=0)
    ap.add_argument("--decoders", default="avc1")
    ap.add_argument("--policy")
    ap.add_argument("--path", default="/api/wall")
    a = ap.parse_args()
    s = socket.socket()
    if a.rate_kbit:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.connect(("127.0.0.1", a.port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {a.path} HTTP/1.1\r\nHost: 127.0.0.1:{a.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            sys.exit("closed during the handshake")
        head += chunk
    status = head.split(b"\r\n")[0].decode()
    if " 101 " not in status:
        print(json.dumps({"error": status}))
        return
    reader = Reader(s, a.rate_kbit)

    def send(obj):
        data = json.dumps(obj).encode()
        mask = os.urandom(4)
        hdr = bytes([0x81]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data)))
        s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    watch = {"watch": [a.stream], "decoders": [d for d in a.decoders.split(",") if d]}
    if a.policy:
        watch["policy"] = json.loads(a.policy)
    send(watch)
    out = {"frames": 0, "keyframes": 0, "bytes": 0, "paths": []}
    ages, start, stats = [], None, None
    end = time.time() + a.seconds + 30
    while time.time() < end:
        opcode, payload = reader.message()
        if opcode is None:
            break
        if opcode == 1:
            m = json.loads(payload)
            if m.get("type") == "path":
                out["paths"].append(m["path"])
            elif m.get("type") == "stats" and a.stream in m.get("tiles", {}):
                stats = m["tiles"][a.stream]
        elif opcode == 2 and len(payload) >= 21:
            kind, flags, slot, arrival, ts, clen = struct.unpack(">BBHdqB", payload[:21])
            now = time.time()
            if start is None:
                start = now
                end = now + a.seconds
                print("watching", flush=True)
            out["frames"] += 1
            out["keyframes"] += flags & 1
            out["bytes"] += len(payload)
            ages.append((now - start, now * 1000 - arrival))
        elif opcode == 8:
            break
    # The second half: what the viewer settled at.
    late = sorted(age for t, age in ages if t >= a.seconds / 2)
    pct = lambda p: round(late[min(len(late) - 1, int(p * len(late)))], 1) if late else None
    out.update({"age_p50_ms": pct(0.5), "age_p95_ms": pct(0.95), "age_max_ms": round(late[-1], 1) if late else None,
                "kbit_s": round(out["bytes"] * 8 / 1000 / max(0.001, a.seconds), 1), "server": stats})
    print(json.dumps(out), flush=True)


class Reader:
    """WebSocket frames from the socket, read no faster than `rate_kbit` (0: as fast as it comes)."""
    def __init__(self, s, rate_kbit):
        self.s, self.buf = s, b""
        self.rate = rate_kbit * 1000 / 8
        self.t0, self.taken = time.time(), 0

    def need(self, n):
        while len(self.buf) < n:
            want = 4096
            if self.rate:
                allowed = self.rate * (time.time() - self.t0) - self.taken
                if allowed < 1024:
                    time.sleep((1024 - allowed) / self.rate)
                    continue
                want = int(min(want, allowed))
            chunk = self.s.recv(want)
            if not chunk:
                return False
            self.taken += len(chunk)
            self.buf += chunk
        return True

    def take(self, n):
        if not self.need(n):
            return None
        b, self.buf = self.buf[:n], self.buf[n:]
        return b

    def message(self):
        h = self.take(2)
        if h is None:
            return None, None
        opcode, n = h[0] & 0x0F, h[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.take(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.take(8))[0]
        payload = self.take(n)
        return opcode, payload


if __name__ == "__main__":
    main()
