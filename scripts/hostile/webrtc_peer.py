#!/usr/bin/python3
"""A hostile peer on LiveRelay's WebRTC UDP port (every WHEP session shares it).

First a correct ICE connectivity check (RFC 8445: a STUN Binding request with USERNAME,
MESSAGE-INTEGRITY under the session's ice-pwd and FINGERPRINT), whose answer must carry the
right XOR-MAPPED-ADDRESS and authenticate. Then `--count` datagrams mutated from a seed
(random.Random(f"{seed}:{n}")): that check with bytes flipped, lengths that overrun, attributes
cut or repeated, the wrong password, a wrong username; DTLS records, RTP and RTCP headers with
noise; plain noise. The mutations go from a second socket (no session there) except the STUN
ones, which are refused by integrity. Exit 0 when the correct check was answered correctly.

With `--tcp PORT`, the same on the ICE-TCP port (RFC 6544, RFC 4571 framing): a correct check
in a frame, the mutations in frames, raw bytes that break the framing on a connection of their
own, the correct check again; then connections past the per-client cap, which must be closed.

    webrtc_peer.py --port P --ufrag U --pwd PW [--peer OFFER-UFRAG] [--seed 1] [--count 1000] [--tcp PORT]
    webrtc_peer.py --whep URL [--log-exchanges] ...   (a session of its own first: ports and credentials from its answer)
"""
import argparse, base64, binascii, hashlib, hmac, os, random, socket, struct, sys, time, urllib.error, urllib.request

COOKIE = 0x2112A442

def attr(t, v):
    pad = (4 - len(v) % 4) % 4
    return struct.pack("!HH", t, len(v)) + v + b"\0" * pad

def binding(username, pwd, tid, extra=b""):
    body = attr(0x0006, username.encode()) + attr(0x0024, struct.pack("!I", 1853824767)) + attr(0x802A, os.urandom(8)) + extra
    head = lambda n: struct.pack("!HHI", 0x0001, n, COOKIE) + tid
    mi = hmac.new(pwd.encode(), head(len(body) + 24) + body, hashlib.sha1).digest()
    body += attr(0x0008, mi)
    crc = (binascii.crc32(head(len(body) + 8) + body) ^ 0x5354554E) & 0xFFFFFFFF
    body += attr(0x8028, struct.pack("!I", crc))
    return head(len(body)) + body

def check_answer(data, tid, pwd, port, ip="127.0.0.1"):
    if len(data) < 20 or struct.unpack("!H", data[:2])[0] != 0x0101 or data[8:20] != tid:
        return "not a Binding success for our transaction"
    i, mapped, mi_at = 20, None, None
    while i + 4 <= len(data):
        t, n = struct.unpack("!HH", data[i:i + 4])
        v = data[i + 4:i + 4 + n]
        if t == 0x0020:
            xport = struct.unpack("!H", v[2:4])[0] ^ (COOKIE >> 16)
            xip = struct.unpack("!I", v[4:8])[0] ^ COOKIE
            mapped = (socket.inet_ntoa(struct.pack("!I", xip)), xport)
        if t == 0x0008:
            mi_at = i
            expected = hmac.new(pwd.encode(), data[:2] + struct.pack("!H", i - 20 + 24) + data[4:i], hashlib.sha1).digest()
            if v != expected:
                return "MESSAGE-INTEGRITY does not verify"
        i += 4 + n + (4 - n % 4) % 4
    if mapped != (ip, port):
        return f"XOR-MAPPED-ADDRESS {mapped}, expected {(ip, port)}"
    if mi_at is None:
        return "no MESSAGE-INTEGRITY"
    return None

def mutate(r, good, pwd, ufrag, peer):
    k = r.randrange(10)
    if k == 0:  # flip bytes of a correct check
        b = bytearray(good)
        for _ in range(r.randrange(1, 8)):
            b[r.randrange(len(b))] ^= 1 << r.randrange(8)
        return bytes(b)
    if k == 1:  # a length that overruns (header or an attribute)
        b = bytearray(good)
        at = r.choice([2, 20 + 2])
        b[at:at + 2] = struct.pack("!H", r.choice([0xFFFF, len(b), len(b) + 4, 3]))
        return bytes(b)
    if k == 2:  # the wrong password
        return binding(f"{ufrag}:{peer}", "wrong-" + pwd, os.urandom(12))
    if k == 3:  # a wrong or huge username
        return binding(r.choice(["nobody:peer", ufrag, ":", "x" * 600 + ":" + ufrag, ufrag + ":" + "\xff" * 10]), pwd, os.urandom(12))
    if k == 4:  # cut short
        return good[:r.randrange(0, len(good))]
    if k == 5:  # attributes repeated many times
        return binding(f"{ufrag}:{peer}", pwd, os.urandom(12), extra=attr(0x0025, b"") * r.randrange(1, 200))
    if k == 6:  # a DTLS record header with noise
        return bytes([r.choice([20, 21, 22, 23])]) + b"\xfe\xfd" + os.urandom(r.randrange(0, 300))
    if k == 7:  # RTCP (PLI, NACK) with noise
        return bytes([0x81, r.choice([200, 201, 205, 206])]) + os.urandom(r.randrange(0, 200))
    if k == 8:  # RTP with noise
        return bytes([0x80, r.randrange(128)]) + os.urandom(r.randrange(0, 1400))
    return os.urandom(r.randrange(0, 1500))

OFFER = "\r\n".join([
    "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
    "m=video 9 UDP/TLS/RTP/SAVPF 96 102", "c=IN IP4 0.0.0.0", "a=mid:0", "a=ice-ufrag:abcd", "a=ice-pwd:0123456789012345678901",
    "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), "a=setup:actpass", "a=recvonly", "a=rtcp-mux",
    "a=rtpmap:96 VP8/90000", "a=rtpmap:102 H264/90000", "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
    "a=rtcp-fb:102 nack", "a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:1", "a=recvonly", "a=rtpmap:111 opus/48000/2", ""])

def mutate_offer(r):
    b = bytearray(OFFER.encode())
    k = r.randrange(6)
    if k == 0:
        for _ in range(r.randrange(1, 20)): b[r.randrange(len(b))] = r.randrange(256)
    elif k == 1:
        b = b[:r.randrange(len(b))]
    elif k == 2:  # a line repeated many times
        lines = bytes(b).split(b"\r\n"); line = r.choice(lines)
        b = bytearray(b"\r\n".join(lines + [line] * r.randrange(1, 3000)))
    elif k == 3:  # numbers at their extremes
        for old in (b"102", b"90000", b"48000", b" 9 "):
            b = b.replace(old, r.choice([b"-1", b"99999999999999999999", b"0", b"128", b"nan"]), 1)
    elif k == 4:  # huge values
        b = b.replace(b"a=ice-ufrag:abcd", b"a=ice-ufrag:" + b"x" * r.randrange(100, 70000), 1)
    else:  # noise
        b = bytearray(os.urandom(r.randrange(0, 3000)))
    return bytes(b)

def post_offers(url, user, seed, count):
    statuses = {}
    for n in range(count):
        r = random.Random(f"offer:{seed}:{n}")
        body = mutate_offer(r) if n % 10 else OFFER.encode()
        req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/sdp"})
        if user:
            req.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                code = resp.status
        except urllib.error.HTTPError as e:
            code = e.code
        statuses[code] = statuses.get(code, 0) + 1
        if code >= 500:
            print(f"offer {n} answered {code}")
            sys.exit(1)
    print("offers answered: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int)
    p.add_argument("--ufrag")
    p.add_argument("--pwd")
    p.add_argument("--whep", help="POST a correct offer here first and take the ports and credentials from the answer")
    p.add_argument("--log-exchanges", action="store_true", help="print each mutation sent (exchange N KIND LENGTH), to replay a crash by seed")
    p.add_argument("--peer", default="abcd", help="the ice-ufrag of the offer")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--bind", default="127.0.0.1", help="the address to send the checks from")
    p.add_argument("--offers", help="also POST mutated offers to this WHEP or WHIP URL")
    p.add_argument("--user", help="user:password for the offers")
    p.add_argument("--offer-count", type=int, default=200)
    p.add_argument("--tcp", type=int, help="the ICE-TCP port: the same attacks in RFC 4571 frames")
    p.add_argument("--tcp-extra", type=int, default=8, help="connections opened at the end, past the per-client cap")
    a = p.parse_args()
    if not a.whep and not (a.port and a.ufrag and a.pwd):
        p.error("--port, --ufrag and --pwd (or --whep)")
    if a.offers:
        post_offers(a.offers, a.user, a.seed, a.offer_count)
    if a.whep:
        session(a)  # after the offers: a session never connected ends after 15 s
    checker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    checker.bind((a.bind, 0))
    good = correct_check(checker, a, "")
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.1", 0))
    answered = 0
    checker.setblocking(False)
    for n in range(a.count):
        r = random.Random(f"{a.seed}:{n}")
        m = mutate(r, good, a.pwd, a.ufrag, a.peer)
        if a.log_exchanges:
            print(f"exchange {n} udp {m[:1].hex()} {len(m)}")
        (checker if m[:1] and m[0] < 4 else other).sendto(m, ("127.0.0.1", a.port))
        try:
            while True:
                checker.recvfrom(2048)
                answered += 1
        except (BlockingIOError, socket.error):
            pass
    if a.whep:
        session(a)  # a session never connected ends after 15 s: a long run checks a fresh one
    correct_check(checker, a, " after the mutations")
    print(f"{a.count} mutated datagrams sent; {answered} of them answered (they must have authenticated: flipped bits outside the checked bytes)")
    if a.tcp:
        tcp_part(a)

def session(a):
    """A correct WHEP offer: the answer's UDP and TCP ports and its ICE credentials."""
    # The mutated offers' sessions may hold the per-client cap (429) until they expire (15 s).
    for attempt in range(40):
        req = urllib.request.Request(a.whep, data=OFFER.encode(), method="POST", headers={"Content-Type": "application/sdp"})
        if a.user:
            req.add_header("Authorization", "Basic " + base64.b64encode(a.user.encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = resp.read().decode()
            break
        except urllib.error.HTTPError as e:
            if e.code != 429 or attempt == 39:
                raise
            time.sleep(1)
    for line in answer.split("\r\n"):
        if line.startswith("a=ice-ufrag:"):
            a.ufrag = line[12:]
        elif line.startswith("a=ice-pwd:"):
            a.pwd = line[10:]
        elif line.startswith("a=candidate:"):
            f = line.split(" ")
            if f[2] == "udp":
                a.port = int(f[5])
            elif f[2] == "tcp":
                a.tcp = int(f[5])

def framed(m):
    return struct.pack("!H", len(m)) + m

def tcp_check(sock, a, when):
    """A correct check in a frame on `sock`; exits 1 unless its framed answer comes and verifies."""
    sock.settimeout(3)
    tid = os.urandom(12)
    check = binding(f"{a.ufrag}:{a.peer}", a.pwd, tid)
    sock.sendall(framed(check))
    buf = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                print("the ICE-TCP connection closed before answering a correct check" + when)
                sys.exit(1)
            buf += chunk
            while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                n = struct.unpack("!H", buf[:2])[0]
                frame, buf = buf[2:2 + n], buf[2 + n:]
                if frame[8:20] == tid:
                    problem = check_answer(frame, tid, a.pwd, sock.getsockname()[1], a.bind)
                    if problem:
                        print("answer to a correct check over TCP" + when + ": " + problem)
                        sys.exit(1)
                    return check
    except socket.timeout:
        print("no answer to a correct check over TCP" + when)
        sys.exit(1)

def tcp_part(a):
    s = socket.create_connection(("127.0.0.1", a.tcp), timeout=3, source_address=(a.bind, 0))
    good = tcp_check(s, a, "")
    other = socket.create_connection(("127.0.0.1", a.tcp), timeout=3)
    raw = socket.create_connection(("127.0.0.1", a.tcp), timeout=3)
    s.setblocking(False)
    for n in range(a.count):
        r = random.Random(f"tcp:{a.seed}:{n}")
        m = mutate(r, good, a.pwd, a.ufrag, a.peer)
        if a.log_exchanges:
            print(f"exchange {n} tcp {m[:1].hex()} {len(m)}")
        try:
            if n % 17 == 0:  # bytes that break the framing: a length that lies, a cut frame
                raw.sendall(os.urandom(r.randrange(1, 300)))
            elif m[:1] and m[0] < 4:
                s.sendall(framed(m))
            else:
                other.sendall(framed(m))
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            pass
        try:
            while s.recv(65536):
                pass
        except (BlockingIOError, socket.error):
            pass
    if a.whep:
        session(a)
    tcp_check(s, a, " after the mutations")
    # Connections past the per-client cap are closed at once.
    extra, closed = [], 0
    for _ in range(a.tcp_extra):
        c = socket.create_connection(("127.0.0.1", a.tcp), timeout=3)
        extra.append(c)
    for c in extra:
        c.settimeout(2)
        try:
            if c.recv(1) == b"":
                closed += 1
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed += 1
    print(f"{a.count} mutated frames sent over ICE-TCP; {closed} of {a.tcp_extra} connections past the cap closed")
    if closed == 0:
        print("no connection past the per-client cap was closed")
        sys.exit(1)

def correct_check(sock, a, when):
    """Sends a correct connectivity check and exits 1 unless its answer comes and verifies;
    returns the check's bytes (the seed of the mutations)."""
    sock.settimeout(2)
    tid = os.urandom(12)
    check = binding(f"{a.ufrag}:{a.peer}", a.pwd, tid)
    sock.sendto(check, ("127.0.0.1", a.port))
    try:
        while True:
            data, _ = sock.recvfrom(2048)
            if data[8:20] == tid:
                break
    except socket.timeout:
        print("no answer to a correct connectivity check" + when)
        sys.exit(1)
    problem = check_answer(data, tid, a.pwd, sock.getsockname()[1], a.bind)
    if problem:
        print("answer to a correct check" + when + ": " + problem)
        sys.exit(1)
    return check

if __name__ == "__main__":
    main()
