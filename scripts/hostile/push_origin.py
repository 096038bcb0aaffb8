#!/usr/bin/python3
"""A hostile HLS push origin: LiveRelay PUTs segments, parts and playlists to it (`hls.push`)
and DELETEs what left the window; each request gets an answer mutated from a seed — statuses
from 0 to 2^64, lying Content-Length, broken chunking, bodies past any cap, floods of headers,
redirects to itself, resets, slow drips (http_answers.py). One line per request (an exchange):

    push_origin.py --port P --seed 7 --exchanges 10000
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_answers, peer

a = peer.arguments(extra=[("--mutate", dict(type=float, default=0.5, help="share of answers broken"))])

def exchange(conn, r, n, what):
    method, path, body = http_answers.read_request(conn)
    what.append(f"{method} {path} ({len(body)} bytes)")
    if method is None:
        conn.close()
    elif r.random() < a.mutate:
        http_answers.answer(conn, r, b"", what, status=201, content_type="text/plain", port=a.port)
    else:
        conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); conn.close()
        what.append("plain 201")

http_answers.accept_exchanges(a, exchange)
