#!/usr/bin/python3
"""A hostile WHIP endpoint: LiveRelay's WHIP push forwards POST offers to it and DELETE their
sessions; each request gets an answer mutated from a seed: the HTTP answer itself
(http_answers.py: statuses, lying lengths, broken framing, resets, floods), or a 201 whose SDP
answer lies (candidates with impossible addresses and ports, missing or doubled ICE credentials,
fingerprints of every length, payload types past 127, rejected sections, lines cut or repeated,
noise). Its candidates point at a UDP socket of its own that answers every datagram with noise,
half-right STUN or DTLS-looking bytes, and at a passive ICE-TCP port of its own whose RFC 4571
frames lie (lengths past the data, empty frames, unframed noise, half-right STUN, a frame cut by
a close). One answer in ten is whole, so those paths are reached. One line per request (an
exchange), and one per ICE-TCP connection (`ice-tcp connection N`):

    whip_endpoint.py --port P --seed 7 --exchanges 100
"""
import os, random, socket, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_answers, peer

a = peer.arguments(extra=[("--mutate", dict(type=float, default=0.8, help="share of answers broken"))])
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
udp_port = udp.getsockname()[1]

def udp_noise():
    r = random.Random(f"{a.seed}:udp")
    while True:
        data, addr = udp.recvfrom(65536)
        k = r.random()
        if k < 0.3:
            out = os.urandom(r.randrange(1, 1500))
        elif k < 0.6 and len(data) >= 20:
            # A binding success echoing the transaction, its attributes noise.
            attrs = os.urandom(r.choice([0, 4, 7, 40, 600]))
            out = b"\x01\x01" + len(attrs).to_bytes(2, "big") + data[4:20] + attrs
        elif k < 0.8:
            out = bytes([r.choice([20, 21, 22, 23, 63])]) + b"\xfe\xfd" + os.urandom(r.randrange(10, 300))
        else:
            out = bytes([0x80 | r.randrange(64), r.choice([72, 200, 201, 206])]) + os.urandom(r.randrange(2, 200))
        try:
            udp.sendto(out, addr)
        except OSError:
            pass

threading.Thread(target=udp_noise, daemon=True).start()

tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", 0))
tcp.listen(64)
tcp_port = tcp.getsockname()[1]

def tcp_frames(conn, r):
    """One ICE-TCP connection: every read answered by lying frames, until it closes."""
    conn.settimeout(5)
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            k = r.random()
            if k < 0.2:
                out = os.urandom(r.randrange(1, 3000))
            elif k < 0.4:
                body = os.urandom(r.randrange(0, 100))
                out = r.choice([0, 1, 65535, len(body) + 50]).to_bytes(2, "big") + body
            elif k < 0.6 and len(data) >= 22:
                attrs = os.urandom(r.choice([0, 4, 7, 40, 600]))
                stun = b"\x01\x01" + len(attrs).to_bytes(2, "big") + data[6:22] + attrs
                out = len(stun).to_bytes(2, "big") + stun
            elif k < 0.7:
                out = b"\x00\x00" * r.randrange(1, 1000)
            elif k < 0.8:
                out = (300).to_bytes(2, "big") + bytes([22, 0xfe, 0xfd]) + os.urandom(50)
                conn.sendall(out)
                return
            else:
                body = bytes([r.choice([20, 21, 22, 23, 63, 0x80, 0x90])]) + os.urandom(r.randrange(10, 300))
                out = len(body).to_bytes(2, "big") + body
            conn.sendall(out)
    except OSError:
        pass
    finally:
        conn.close()

tcp_connections = [0]

def tcp_accept():
    n = 0
    while True:
        conn, _ = tcp.accept()
        n += 1
        tcp_connections[0] = n
        sys.stdout.write(f"ice-tcp connection {n}\n")
        sys.stdout.flush()
        threading.Thread(target=tcp_frames, args=(conn, random.Random(f"{a.seed}:tcp:{n}")), daemon=True).start()

threading.Thread(target=tcp_accept, daemon=True).start()

def sdp_answer(r, what, mutated=True):
    fp = ":".join(f"{b:02X}" for b in os.urandom(32))
    lines = ["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=ice-lite", "a=group:BUNDLE 0 1",
             "m=video 9 UDP/TLS/RTP/SAVPF 102", "c=IN IP4 0.0.0.0", "a=mid:0", "a=ice-ufrag:abcd", "a=ice-pwd:0123456789abcdef01234567",
             f"a=fingerprint:sha-256 {fp}", "a=setup:passive", "a=rtcp-mux", "a=recvonly", "a=rtpmap:102 H264/90000",
             f"a=candidate:1 1 udp 2130706431 127.0.0.1 {udp_port} typ host",
             f"a=candidate:3 1 tcp 1518280447 127.0.0.1 {tcp_port} typ host tcptype passive", "a=end-of-candidates",
             "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:1", "a=recvonly", "a=rtpmap:111 opus/48000/2"]
    for _ in range(r.randrange(1, 6) if mutated else 0):
        k = r.randrange(10)
        i = r.randrange(len(lines))
        if k == 0: del lines[i]; what.append("line dropped")
        elif k == 1: lines.insert(i, lines[i]); what.append("line doubled")
        elif k == 2:
            addr = r.choice(["999.1.1.1", "::1", "", "127.0.0.1.1", "localhost", "0.0.0.0", "255.255.255.255", "a" * 300])
            port = r.choice([0, -1, 65536, 2**32, 2**64, "x", udp_port])
            lines.append(f"a=candidate:2 1 {r.choice(['udp', 'tcp', 'UDP', ''])} {r.choice([0, 2**32, 2**64, 'p'])} {addr} {port} typ host")
            what.append(f"candidate {addr[:20]}:{port}")
        elif k == 3: lines = [l for l in lines if not l.startswith("a=ice-")]; what.append("no ICE credentials")
        elif k == 4: lines = [l.replace("sha-256 " + fp, "sha-256 " + r.choice(["", "00", fp * 3, "zz"])) for l in lines]; what.append("bad fingerprint")
        elif k == 5: lines = [l.replace("102", r.choice(["999", "128", "-1", "1" * 40])) for l in lines]; what.append("payload type out of range")
        elif k == 6: lines = [l.replace("m=video 9", "m=video 0") for l in lines]; what.append("video rejected")
        elif k == 7: lines[i] = lines[i] * r.choice([2, 100, 2000]); what.append("long line")
        elif k == 8: lines.insert(i, os.urandom(r.randrange(1, 200)).decode("latin-1")); what.append("noise line")
        else: lines = [l.replace("passive", r.choice(["active", "actpass", "holdconn", ""])) for l in lines]; what.append("setup role")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1", "replace")

def exchange(conn, r, n, what):
    method, path, body = http_answers.read_request(conn)
    what.append(f"{method} {path} ({len(body)} bytes)")
    if method is None:
        conn.close()
        return
    if method == "DELETE":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); conn.close()
        return
    # One offer in ten gets a whole answer, so that the paths behind it (the noisy UDP
    # candidate, then the lying ICE-TCP port) are reached whatever the seed.
    whole = n % 10 == 1
    sdp = sdp_answer(r, what, mutated=not whole)
    if not whole and r.random() < a.mutate / 2:
        http_answers.answer(conn, r, sdp, what, status=201, content_type="application/sdp", port=a.port)
    else:
        location = r.choice([b"/session/1", b"http://127.0.0.1:1/x", b"", b"\xff\xfe", b"//evil", b"/" + b"a" * 5000])
        conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: " + location +
                     b"\r\nContent-Length: " + str(len(sdp)).encode() + b"\r\nConnection: close\r\n\r\n" + sdp)
        conn.close()
        what.append("201 with the answer")

http_answers.accept_exchanges(a, exchange)
# A whole answer's ICE-TCP attempt comes 2 s after it: waited for, so that the last one is seen.
deadline = time.time() + 5
while tcp_connections[0] == 0 and time.time() < deadline:
    time.sleep(0.1)
