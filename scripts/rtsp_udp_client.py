#!/usr/bin/env python3
"""A bare RTSP/UDP client for the session-timeout tests: DESCRIBE, SETUP (UDP unicast), PLAY,
then receives RTP for a while, sending an RTCP receiver report every second or nothing at all,
and never another request. Prints one JSON line: RTP packets received in total and in the last
two seconds, and whether the server closed the control connection.

  rtsp_udp_client.py PORT STREAM SECONDS (rtcp|silent)
"""
import json, socket, sys, time

port, stream, seconds, mode = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
base = f"rtsp://127.0.0.1:{port}/{stream}"
c = socket.create_connection(("127.0.0.1", port), timeout=10)
buf = b""

def request(text):
    global buf
    c.sendall(text.encode())
    while b"\r\n\r\n" not in buf:
        buf += c.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    headers = dict(l.split(": ", 1) for l in head.decode().split("\r\n")[1:] if ": " in l)
    n = int(headers.get("Content-Length", "0"))
    while len(rest) < n:
        rest += c.recv(65536)
    buf = rest[n:]
    return head.decode().split("\r\n")[0], headers

rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtp.bind(("127.0.0.1", 0)); rtp.setblocking(False)
rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtcp.bind(("127.0.0.1", 0))
a, b = rtp.getsockname()[1], rtcp.getsockname()[1]
status, _ = request(f"DESCRIBE {base} RTSP/1.0\r\nCSeq: 1\r\n\r\n")
assert status.endswith("200 OK"), status
status, h = request(f"SETUP {base}/streamid=0 RTSP/1.0\r\nCSeq: 2\r\nTransport: RTP/AVP;unicast;client_port={a}-{b}\r\n\r\n")
assert status.endswith("200 OK"), status
session = h["Session"].split(";")[0]
server_rtcp = int(h["Transport"].split("server_port=")[1].split("-")[1].split(";")[0])
status, _ = request(f"PLAY {base} RTSP/1.0\r\nCSeq: 3\r\nSession: {session}\r\n\r\n")
assert status.endswith("200 OK"), status

c.setblocking(False)
total, recent, closed = 0, 0, False
start = time.time()
next_report = start + 1
while time.time() - start < seconds:
    try:
        while True:
            rtp.recv(2048)
            total += 1
            if time.time() - start > seconds - 2:
                recent += 1
    except BlockingIOError:
        pass
    try:
        if c.recv(65536) == b"":
            closed = True
    except BlockingIOError:
        pass
    except OSError:
        closed = True
    if mode == "rtcp" and time.time() >= next_report:
        # An empty receiver report: version 2, RR (201), length 1, our SSRC.
        rtcp.sendto(b"\x80\xc9\x00\x01\x00\x00\x12\x34", ("127.0.0.1", server_rtcp))
        next_report += 1
    time.sleep(0.01)
print(json.dumps({"total": total, "recent": recent, "closed": closed}), flush=True)
