#!/usr/bin/env python3
"""Clients that hold a server's resources for nothing: for the connection-limit tests.

  slow_clients.py hold PORT --idle N --slowloris M --seconds S
      opens N idle connections and M that send half a request, waits S seconds, and prints
      how many of each the server has closed by then (JSON).
  slow_clients.py stalled PORT PATH --seconds S [--auth user:pass]
      asks for PATH (an MJPEG stream) with a tiny receive buffer and never reads; after S
      seconds reads what arrived and says whether the server had closed the connection.
"""
import argparse, base64, json, select, socket, sys, time

def readable(sock, timeout):
    """poll, not select: a thousand sockets take descriptors beyond select's 1024."""
    p = select.poll()
    p.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(p.poll(timeout * 1000))

def closed(sock):
    """True when the peer closed (or reset) the connection; drains what is buffered."""
    sock.setblocking(False)
    try:
        while True:
            if not readable(sock, 0.2):
                return False
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except BlockingIOError:
        return False

def hold(a):
    idle, slow = [], []
    for _ in range(a.idle):
        idle.append(socket.create_connection(("127.0.0.1", a.port)))
    for _ in range(a.slowloris):
        s = socket.create_connection(("127.0.0.1", a.port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")
        slow.append(s)
    print("ready", flush=True)
    end = time.time() + a.seconds
    while time.time() < end:
        # slowloris: a byte now and then, never finishing the headers
        for s in slow:
            try: s.send(b"a")
            except OSError: pass
        time.sleep(0.5)
    print(json.dumps({"idle_closed": sum(closed(s) for s in idle), "idle": len(idle),
                      "slowloris_closed": sum(closed(s) for s in slow), "slowloris": len(slow)}), flush=True)

def stalled(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", a.port))
    head = f"GET {a.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if a.auth:
        head += "Authorization: Basic " + base64.b64encode(a.auth.encode()).decode() + "\r\n"
    s.sendall((head + "\r\n").encode())
    print("ready", flush=True)
    time.sleep(a.seconds)
    # Whatever the kernel buffered is read now; a stream still open would never end.
    end = time.time() + 3
    result = False
    s.setblocking(False)
    while time.time() < end:
        if not readable(s, 0.2):
            continue
        try:
            data = s.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError):
            result = True
            break
        if not data:
            result = True
            break
    print(json.dumps({"closed": result}), flush=True)

p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
h = sub.add_parser("hold"); h.add_argument("port", type=int); h.add_argument("--idle", type=int, default=0)
h.add_argument("--slowloris", type=int, default=0); h.add_argument("--seconds", type=float, default=5)
st = sub.add_parser("stalled"); st.add_argument("port", type=int); st.add_argument("path")
st.add_argument("--seconds", type=float, default=5); st.add_argument("--auth")
a = p.parse_args()
hold(a) if a.cmd == "hold" else stalled(a)
