#!/usr/bin/python3
"""A hostile JWKS endpoint: LiveRelay fetches its key set (`auth.jwt.jwks: http://…`, every
`refresh`); each fetch gets a document mutated from a seed — keys whose numbers are empty, a
byte, megabytes, not base64url or of the wrong type; unknown kty/crv/alg; RSA moduli of 1 to
65 536 bits and exponents of 0 or 2^4096; 100 000 keys; nesting 100 000 deep; truncated, non-UTF-8
or BOM'd JSON — sent through mutated HTTP answers (http_answers.py). After each document it
presents LiveRelay tokens whose `kid` names one of the keys just served (signed by its own
P-256 key, or not), from a rotating loopback address so the failed-login limit does not stop
the checks. One line per fetch (an exchange):

    jwks_endpoint.py --port P --relay HTTP_PORT --seed 7 --exchanges 10000
"""
import os, sys, random, json, base64, time, socket, hashlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_answers, peer
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def good_key(seed):
    priv = ec.derive_private_key(1 + int.from_bytes(hashlib.sha256(f"liverelay:{seed}".encode()).digest()[:25], "big"), ec.SECP256R1())
    n = priv.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "good", "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}
    return priv, jwk

def token(priv, kid, r, clean=False):
    header = {"alg": r.choice(["ES256", "ES256", "RS256", "none", "HS256", "ES512"]), "typ": "JWT", "kid": kid}
    claims = {"sub": "hostile", "exp": r.choice([int(time.time()) + 600, 0, -1, 2**63, 1e308, "soon"]),
              "liverelay_permissions": r.choice([[{"action": "read", "streams": "*"}], "all", [{"action": 7}], None])}
    if clean:
        header = {"alg": "ES256", "typ": "JWT", "kid": "good"}
        claims = {"sub": "viewer", "exp": int(time.time()) + 600, "liverelay_permissions": [{"action": "read", "streams": "*"}]}
    signing = (b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())).encode()
    if clean or r.random() < 0.7:
        rr, ss = decode_dss_signature(priv.sign(signing, ec.ECDSA(hashes.SHA256())))
        sig = rr.to_bytes(32, "big") + ss.to_bytes(32, "big")
    else:
        sig = r.choice([b"", b"\x00" * 64, os.urandom(r.choice([1, 64, 512, 100000]))])
    return signing.decode() + "." + b64(sig)

NUMBERS = ["", "A", "AA", "_-_-", "!!!!", "====", "a" * 43, "a" * 44, "a" * 5000, "a" * 400000, 0, -1, 2**64, 1e308, None, [], {}, True]

def mutated_key(r, good):
    k = dict(good)
    kind = r.randrange(6)
    if kind == 0:   # EC fields broken
        for f in r.sample(["x", "y", "crv", "kty", "alg", "kid"], r.randrange(1, 4)):
            k[f] = r.choice(NUMBERS + ["P-384", "P-521", "secp256k1", "Ed25519", "OKP", "oct", "RSA", "EC", "\udcff"])
    elif kind == 1: # RSA of odd sizes
        bits = r.choice([1, 8, 512, 1024, 2047, 2048, 4096, 8192, 16384, 65536])
        n = b"\xff" + os.urandom(max(0, bits // 8 - 1)) if bits >= 8 else b"\x01"
        e = r.choice([b"", b"\x00", b"\x01", b"\x03", b"\x01\x00\x01", b"\xff" * 512])
        k = {"kty": "RSA", "alg": r.choice(["RS256", "RS512", "PS256", "none"]), "kid": r.choice(["good", "rsa", ""]), "n": b64(n), "e": b64(e)}
    elif kind == 2: # symmetric and unknown
        k = {"kty": r.choice(["oct", "OKP", "", "x" * 1000]), "k": r.choice(NUMBERS), "kid": "good", "crv": "Ed25519", "x": r.choice(NUMBERS)}
    elif kind == 3: # certificate chains and extras
        k["x5c"] = [r.choice(["", "MII" + "A" * 3000, "!!!"])] * r.choice([1, 50])
        k["use"] = r.choice(["sig", "enc", 7, None]); k["key_ops"] = r.choice([["verify"], [], "verify", [None]])
    elif kind == 4: # wrong types everywhere
        k = r.choice([None, 7, "key", [], [good], {"kty": None}])
    return k

def document(r, good):
    k = r.random()
    keys = [good] if r.random() < 0.5 else []
    keys += [mutated_key(r, good) for _ in range(r.choice([1, 1, 2, 5]))]
    if k < 0.05: return b"", "empty"
    if k < 0.10: return b"[" * 100000 + b"]" * 100000, "nested 100000 deep (arrays)"
    if k < 0.13: return b'{"keys":' + b'{"a":' * 50000 + b"1" + b"}" * 50001, "nested 50000 deep (objects)"
    if k < 0.16: return json.dumps({"keys": [good] * 100000}).encode(), "100000 keys"
    if k < 0.20: return b"\xef\xbb\xbf" + json.dumps({"keys": keys}).encode(), "BOM"
    if k < 0.24: return json.dumps({"keys": keys}).encode()[:r.randrange(1, 200)], "truncated"
    if k < 0.28: return b'{"keys":[{"kty":"EC","kid":"\xff\xfe","x":"\xc3"}]}', "not UTF-8"
    if k < 0.32: return json.dumps({"keys": r.choice([None, 7, "x", {}, [[]]])}).encode(), "keys of the wrong type"
    if k < 0.35: return json.dumps(r.choice([[], None, 1e308, "keys"])).encode(), "not an object"
    if k < 0.38: return b'{"keys":[' + b'{"kty":"EC","crv":"P-256","x":"' + b"A" * 900000 + b'","y":"A"}]}', "900 KB field"
    if k < 0.41: return b'{"keys":[], "keys":[' + json.dumps(good).encode() + b"]}", "duplicate member"
    if k < 0.44: return json.dumps({"keys": [good]}).encode().replace(b'"good"', b'"\\ud800"'), "lone surrogate escape"
    if k < 0.55: return json.dumps({"keys": [good]}).encode(), "clean"
    try:
        return json.dumps({"keys": keys}).encode(), f"{len(keys)} keys, mutated"
    except (ValueError, OverflowError):
        return b'{"keys":[]}', "unencodable, sent empty keys"

def present(relay_port, tok, n):
    """GET /api/streams with the token from 127.0.0.(2 + n % 250); returns the status line."""
    s = socket.socket()
    s.settimeout(5)
    try:
        s.bind((f"127.0.0.{2 + n % 250}", 0))
        s.connect(("127.0.0.1", relay_port))
        s.sendall(f"GET /api/streams/good HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tok}\r\nConnection: close\r\n\r\n".encode())
        return s.recv(64).split(b"\r\n")[0].decode("latin-1")
    except OSError as e:
        return f"({e.__class__.__name__})"
    finally:
        s.close()

a = peer.arguments(extra=[("--relay", dict(type=int, required=True, help="LiveRelay's HTTP port (tokens are presented there)")),
                          ("--clean", dict(action="store_true", help="serve the clean key set and present valid tokens (a control)"))])
priv, good = good_key(a.seed)

def exchange(conn, r, n, what):
    try:
        method, path, _ = http_answers.read_request(conn)
        body, shape = document(r, good) if not a.clean else (json.dumps({"keys": [good]}).encode(), "clean")
        what.append(f"{method} {path}: {shape} ({len(body)} bytes)")
        if a.clean or r.random() < 0.6:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            conn.close()
        else:
            http_answers.answer(conn, r, body, what, port=a.port)
    except OSError as e:
        what.append(f"socket: {e.__class__.__name__}")
        conn.close()
    # Tokens naming the keys just served, checked while the next fetch is on its way.
    kid = r.choice(["good", "rsa", "", "x" * 3000]) if not a.clean else "good"
    what.append(f"token kid {kid[:8]!r}: {present(a.relay, token(priv, kid, r, a.clean), n)}")

http_answers.accept_exchanges(a, exchange)
