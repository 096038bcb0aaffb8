#!/usr/bin/env python3
"""A webhook receiver for the tests: takes POSTs on a free loopback port, refuses the first
--refuse-first of them with 503, and appends each request as one JSON line to LOG:
{"n": N, "answered": CODE, "headers": {...}, "body": "..."}.
Prints "listening PORT" once ready."""
import argparse, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("log")
parser.add_argument("--refuse-first", type=int, default=0)
args = parser.parse_args()
lock = threading.Lock()
count = 0

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        with lock:
            count += 1
            n = count
            code = 503 if n <= args.refuse_first else 204
            with open(args.log, "a") as f:
                f.write(json.dumps({"n": n, "answered": code, "path": self.path,
                                    "headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": body.decode("utf-8", "replace")}) + "\n")
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
