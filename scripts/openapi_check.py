#!/usr/bin/env python3
"""Checks LiveRelay's OpenAPI document against a running server.

  openapi_check.py BASE_URL [--param NAME=VALUE ...] [--write-param NAME=VALUE ...]
                   [--query OPERATION_ID=QUERY ...] [--auth USER:PASS]

1. The document (BASE_URL/api/openapi.json) is OpenAPI 3.1 with a response for every operation.
2. Every operation whose path parameters --param fills is called, in the order POST, PUT, PATCH,
   GET, DELETE (a request body from the document's example): the status must be one the
   document lists, and a JSON body must meet the schema documented for that status. Streaming
   answers (event streams, MJPEG, WebSocket upgrades) are checked by status and type only.
Prints one line per operation; exits 1 on any failure."""
import argparse, base64, json, re, sys, urllib.request, urllib.error
from jsonschema import Draft202012Validator

parser = argparse.ArgumentParser()
parser.add_argument("base")
parser.add_argument("--param", action="append", default=[])
parser.add_argument("--write-param", action="append", default=[],
                    help="NAME=VALUE for POST, PUT, PATCH and DELETE (a stream the check may change)")
parser.add_argument("--query", action="append", default=[],
                    help="OPERATION_ID=QUERY: the query string to call that operation with")
parser.add_argument("--auth")
args = parser.parse_args()
read_params = dict(p.split("=", 1) for p in args.param)
write_params = dict(read_params, **dict(p.split("=", 1) for p in args.write_param))
failures = []

def request(method, path, body=None, stream=False):
    req = urllib.request.Request(args.base + path, method=method, data=body)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if args.auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(args.auth.encode()).decode())
    try:
        resp = urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as e:
        resp = e
    ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
    # A stream (events, MJPEG) is judged by its head: its body never ends.
    data = b"" if stream else resp.read()
    resp.close()
    return resp.status, ctype, data

status, ctype, raw = request("GET", "/api/openapi.json")
doc = json.loads(raw)
if status != 200 or not str(doc.get("openapi", "")).startswith("3.1"):
    print(f"FAIL the document: {status} openapi={doc.get('openapi')}")
    sys.exit(1)

operations = []
for path, item in doc["paths"].items():
    for method, op in item.items():
        if method in ("get", "put", "post", "delete", "patch", "head"):
            if not op.get("responses"):
                failures.append(f"{method.upper()} {path}: no responses documented")
            operations.append((method.upper(), path, op))

components = doc.get("components", {})
order = {"POST": 0, "PUT": 1, "PATCH": 2, "GET": 3, "HEAD": 3, "DELETE": 4}
checked = 0
for method, path, op in sorted(operations, key=lambda o: order[o[0]]):
    params = read_params if method in ("GET", "HEAD") else write_params
    names = re.findall(r"{([A-Za-z_]+)}", path)
    if any(n not in params for n in names):
        print(f"skip  {method} {path} (no value for {', '.join(n for n in names if n not in params)})")
        continue
    url = path
    for n in names:
        url = url.replace("{" + n + "}", params[n])
    query = dict(q.split("=", 1) for q in args.query).get(op.get("operationId", ""))
    if query:
        url += "?" + query
    body = None
    rb = op.get("requestBody", {}).get("content", {}).get("application/json")
    if rb is not None:
        if "example" not in rb:
            print(f"skip  {method} {path} (no example body)")
            continue
        body = json.dumps(rb["example"]).encode()
    streaming = op.get("x-streaming", False)
    status, ctype, data = request(method, url, body, stream=streaming)
    responses = op["responses"]
    documented = responses.get(str(status)) or responses.get("default")
    if documented is not None and "$ref" in documented:
        # A shared answer (401, 403): components/responses/NAME.
        documented = components.get("responses", {}).get(documented["$ref"].rsplit("/", 1)[-1])
    if documented is None:
        failures.append(f"{method} {url}: answered {status}, not a documented status ({', '.join(responses)})")
        continue
    content = documented.get("content", {})
    if content and status != 204:
        if ctype not in content:
            failures.append(f"{method} {url}: {status} {ctype}, documented as {', '.join(content)}")
            continue
        schema = content[ctype].get("schema")
        if ctype == "application/json" and schema is not None and not streaming:
            whole = dict(schema)
            whole["components"] = components
            errors = sorted(Draft202012Validator(whole).iter_errors(json.loads(data)), key=lambda e: list(e.path))
            if errors:
                e = errors[0]
                failures.append(f"{method} {url}: {status} body does not meet its schema at {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
                continue
    checked += 1
    print(f"ok    {method} {url} -> {status} {ctype}")

for f in failures:
    print("FAIL  " + f)
print(f"checked {checked} operations, {len(failures)} failures")
sys.exit(1 if failures else 0)
