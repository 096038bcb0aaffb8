#!/usr/bin/python3
"""A hostile RTSP player against LiveRelay's RTSP server: plausible requests, mutated from a seed.

Each exchange is one TCP connection: OPTIONS, DESCRIBE, SETUP (TCP or UDP transport), PLAY, a
moment of reading, TEARDOWN -- with fields drawn from random.Random(f"{seed}:{n}") broken:
numbers at their extremes, empty, huge and non-UTF-8 values, lying Content-Length and
interleaved lengths, odd URIs, methods and Session ids. Prints one line per exchange saying
what it sent, so a crash replays:

    rtsp_player.py --port P --stream cam --seed 7 --exchanges 1000
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer
import random, socket, sys, time

EXTREMES = ["", "0", "-1", "1", "255", "256", "65535", "65536", "2147483647", "4294967296", "9223372036854775807",
            "9223372036854775808", "99999999999999999999999999", "1e20", "inf", "nan", "-", "--", "0-", "-0", " ", ";", "=", ","]
JUNK = [b"", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00" * 4, b"A" * 20000, "é".encode() * 200, b"%n%s", b"\r\n"]

def exchange(a, n):
    r = random.Random(f"{a.seed}:{n}")
    hit = lambda: r.random() < a.mutate
    what = []
    s = socket.create_connection(("127.0.0.1", a.port), timeout=3)
    s.settimeout(0.3)
    base = f"rtsp://127.0.0.1:{a.port}/{a.stream}"
    cseq = 0
    session = None
    def send(method, uri, headers, body=b""):
        nonlocal cseq
        cseq += 1
        cs = str(cseq)
        if hit(): cs = r.choice(EXTREMES); what.append(f"cseq={cs!r}")
        if hit(): uri = r.choice(["*", "", "rtsp://", base + "/streamid=" + r.choice(EXTREMES), base + "/%ff%fe",
                                  "rtsp://127.0.0.1:1/" + "a" * 5000, "/" + a.stream, base.upper(), base + "?x=" + "y" * 900,
                                  base.replace("127.0.0.1", "[::1"), "rtsp://u:p@127.0.0.1/" + a.stream]); what.append(f"uri={uri[:50]!r}")
        if hit(): method = r.choice(["GET", "PUT", "ANNOUNCE", "RECORD", "X" * 200, "", "play", "SETUP SETUP"]); what.append(f"method={method[:20]!r}")
        head = f"{method} {uri} RTSP/1.0\r\nCSeq: {cs}\r\n"
        for k, v in headers: head += f"{k}: {v}\r\n"
        if session: head += f"Session: {session}\r\n"
        raw = head.encode("latin-1", "replace")
        if body or hit():
            length = len(body)
            if hit(): length = r.choice([0, -1, 65537, 1 << 40, len(body) + 10]); what.append(f"content-length={length}")
            raw += f"Content-Length: {length}\r\n".encode()
        if hit(): raw += b"X-Junk: " + r.choice(JUNK) + b"\r\n"; what.append("junk header")
        if hit(): raw += b"".join(f"X-{i}: v\r\n".encode() for i in range(r.choice([70, 500]))); what.append("many headers")
        s.sendall(raw + b"\r\n" + body)
        if hit():
            length = r.choice([0, 4, 65535])
            s.sendall(b"$" + bytes([r.randrange(256)]) + length.to_bytes(2, "big") + bytes(r.randrange(256) for _ in range(min(length, 64))))
            what.append(f"interleaved len {length}")
        try:
            return s.recv(65536)
        except socket.timeout:
            return b""
    try:
        send("OPTIONS", base, [])
        d = send("DESCRIBE", base, [("Accept", "application/sdp")])
        tcp = r.random() < 0.5
        t = "RTP/AVP/TCP;unicast;interleaved=0-1" if tcp else "RTP/AVP;unicast;client_port=50000-50001"
        if hit():
            t = r.choice(["RTP/AVP/TCP;interleaved=" + r.choice(EXTREMES), "RTP/AVP;client_port=" + r.choice(EXTREMES),
                          "RTP/AVP;client_port=" + r.choice(EXTREMES) + "-" + r.choice(EXTREMES), "RTP/AVP;multicast", "",
                          ",,,,", "RTP/AVP;unicast;client_port=65535", "RTP/SAVP;unicast", "RTP/AVP/TCP" + ";x" * 3000,
                          ", ".join(["RTP/AVP"] * 100)])
            what.append(f"transport={t[:50]!r}")
        track = "/streamid=0" if not hit() else "/streamid=" + r.choice(EXTREMES)
        resp = send("SETUP", base + track, [("Transport", t)])
        for line in resp.split(b"\r\n"):
            if line.lower().startswith(b"session:"):
                session = line.split(b":", 1)[1].split(b";")[0].strip().decode("latin-1")
        if hit(): session = r.choice(EXTREMES + ["x" * 3000, "\u00e9"]); what.append(f"session={session[:20]!r}")
        send("PLAY", base + "/", [("Range", "npt=0.000-" if not hit() else "npt=" + r.choice(EXTREMES))])
        end = time.monotonic() + a.read_seconds
        while time.monotonic() < end:
            try:
                if not s.recv(65536): break
            except socket.timeout:
                break
        if hit(): send(r.choice(["PAUSE", "GET_PARAMETER", "SET_PARAMETER"]), base, [])
        send("TEARDOWN", base, [])
    except OSError:
        pass
    finally:
        s.close()
    peer.say(a, n, what)

def main():
    a = peer.arguments(extra=[("--mutate", dict(type=float, default=0.25)), ("--read-seconds", dict(type=float, default=0.2))])
    peer.run(a, exchange)

if __name__ == "__main__":
    main()
