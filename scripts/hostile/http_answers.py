"""Mutated HTTP answers, shared by the hostile peers that LiveRelay calls as a client (an HLS
push origin, a JWKS endpoint): a one-request-per-connection server on a raw socket, so that
status lines, headers, lengths and framing can lie in ways an HTTP library would not write.

answer(conn, r, body, what) sends one answer to one request read off `conn`, mutated from the
random.Random `r`, and appends what it did to `what`."""
import random, socket, struct, time
import peer

STATUSES = [200, 201, 204, 100, 101, 102, 199, 206, 299, 301, 302, 304, 307, 308, 400, 401, 403, 404, 408, 413, 429, 451,
            499, 500, 502, 503, 504, 599, 600, 999, 0, -1, 2**31, 2**64]
JUNK = [b"", b"\xff\xfe\xfd", b"\xc3", b"\xed\xa0\x80", b"\x00" * 16, b"\r\n\r\n", b"HTTP/1.1 200 OK\r\n", b"%n%s%x", "é".encode() * 300]

def read_request(conn, limit=64 << 20):
    """Reads one request (head and Content-Length body, bounded); returns (method, path, body)."""
    conn.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk: return None, None, b""
        data += chunk
        if len(data) > 1 << 20: return None, None, b""
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    method = parts[0].decode("latin-1") if parts else ""
    path = parts[1].decode("latin-1") if len(parts) > 1 else ""
    length = 0
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            try: length = min(int(v.strip()), limit)
            except ValueError: length = 0
    body = rest
    while len(body) < length:
        chunk = conn.recv(min(1 << 20, length - len(body)))
        if not chunk: break
        body += chunk
    return method, path, body

def answer(conn, r, body, what, status=200, content_type="application/json", port=None):
    """One answer: usually plausible, often broken in one or more ways."""
    k = r.random()
    if k < 0.04:
        what.append("closed without answering"); conn.close(); return
    if k < 0.07:
        what.append("reset (RST)")
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); conn.close(); return
    if k < 0.10:
        junk = r.choice(JUNK) * r.choice([1, 100])
        what.append(f"garbage {len(junk)} bytes"); conn.sendall(junk); conn.close(); return
    if k < 0.12:
        what.append("HTTP/0.9 style body only"); conn.sendall(body); conn.close(); return
    if r.random() < 0.35:
        status = r.choice(STATUSES); what.append(f"status {status}")
    reason = "OK"
    if r.random() < 0.05: reason = r.choice(["", "x" * 70000, "\xff\xfe", "OK\r\nX: y"]); what.append("odd reason")
    version = "HTTP/1.1"
    if r.random() < 0.04: version = r.choice(["HTTP/1.0", "HTTP/2", "HTTP/9.9", "HTTP/1.1x", "ICY", ""]); what.append(f"version {version!r}")
    headers = [("Content-Type", content_type), ("Connection", "close")]
    framing = "length"
    length = len(body)
    x = r.random()
    if x < 0.10:
        length = r.choice([0, 1, len(body) // 2, len(body) + 1, len(body) + 100000, 2**31, 2**63, -1])
        what.append(f"content-length {length} for {len(body)}")
    elif x < 0.18:
        framing = "chunked"; what.append("chunked")
    elif x < 0.22:
        framing = "none"; what.append("no length (body to close)")
    elif x < 0.25:
        headers.append(("Content-Length", str(len(body) + 5))); what.append("two content-lengths")
    if framing == "length": headers.append(("Content-Length", str(length)))
    if framing == "chunked": headers.append(("Transfer-Encoding", "chunked"))
    if r.random() < 0.06:
        headers.append(("Content-Encoding", r.choice(["gzip", "deflate", "br", "x-unknown"]))); what.append("content-encoding lie")
    if r.random() < 0.05:
        n = r.choice([200, 5000, 20000]); headers += [(f"X-Flood-{i}", "v" * 50) for i in range(n)]; what.append(f"{n} headers")
    if r.random() < 0.04:
        headers.append(("X-Big", "a" * r.choice([70000, 1 << 20]))); what.append("huge header")
    if r.random() < 0.05 and port:
        headers.append(("Location", r.choice([f"http://127.0.0.1:{port}/loop", "http://127.0.0.1:1/", "file:///etc/passwd", "", "\xff", "//" + "a" * 5000])))
        what.append("location")
    if r.random() < 0.04:
        headers.append(("Retry-After", r.choice(["0", "-1", "99999999999999999999", "nan", "Wed, 21 Oct 2015 07:28:00 GMT"]))); what.append("retry-after")
    if r.random() < 0.03:
        headers.append(("Bad Header", "x")); headers.append(("\xff", "\xfe")); what.append("malformed header names")
    if r.random() < 0.04:
        body = body + b"x" * r.choice([1 << 20, 5 << 20]); what.append(f"body grown to {len(body)}")
        if framing == "length": headers = [(h, v) if h != "Content-Length" else (h, str(len(body))) for h, v in headers]
    head = f"{version} {status} {reason}\r\n" + "".join(f"{h}: {v}\r\n" for h, v in headers) + "\r\n"
    try:
        conn.sendall(head.encode("utf-8", "surrogateescape"))
        if framing == "chunked":
            y = r.random()
            if y < 0.3:
                size = r.choice(["ffffffffffffffff", "-1", "zz", "1" * 40, "0x10", ""])
                conn.sendall(f"{size}\r\n".encode() + body[:100] + b"\r\n0\r\n\r\n"); what.append(f"chunk size {size!r}")
            else:
                for i in range(0, len(body), 4096):
                    piece = body[i:i + 4096]
                    conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                conn.sendall(b"0\r\n\r\n")
        elif r.random() < 0.02:
            what.append("slow drip")
            for i in range(0, min(len(body), 40)):
                conn.sendall(body[i:i + 1]); time.sleep(0.1)
        else:
            conn.sendall(body)
    except OSError as e:
        what.append(f"peer went away ({e.__class__.__name__})")
    conn.close()

def accept_exchanges(a, exchange):
    """One exchange per connection accepted on 127.0.0.1:a.port, up to a.exchanges:
    exchange(conn, r, n, what) answers it (r seeded by seed and n) and says what it did."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", a.port))
    srv.listen(64)
    for n in range(1, a.exchanges + 1):
        conn, _ = srv.accept()
        r = random.Random(f"{a.seed}:{n}")
        what = []
        try:
            exchange(conn, r, n, what)
        except OSError as e:
            what.append(f"socket: {e.__class__.__name__}")
            conn.close()
        peer.say(a, n, what)
    print(f"done: {a.exchanges} exchanges", flush=True)
