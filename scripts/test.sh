#!/usr/bin/env bash
# Runs LiveRelay's test suite: checks the sources for forms a peer's bytes could trap on, builds
# the tests (`swift build --build-tests`) and runs them.
#   scripts/test.sh            everything (CI): installs what the tests need first (FFmpeg,
#                              gst-rtsp-server, nginx-rtmp, Chromium … scripts/setup.sh); the
#                              tests start their own servers on free ports
#   scripts/test.sh --fast     the tests tagged `.fast` (Swift Testing tags, Tests/*/Tags.swift),
#                              in under 3 minutes; installs only what building needs
#                              (scripts/setup.sh --build). They start no server and no process:
#                              every exec of the run is traced (strace), and one besides the test
#                              binary fails the run, as does a run over 3 minutes.
# Further arguments go to `swift test` (everything) or to the test binary (--fast; e.g. `--skip
# REGEX`, `--verbose`; a `--filter` of your own adds tests to the fast set, it does not narrow it).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
if [ "$fast" = 1 ]; then bash scripts/setup.sh --build; else bash scripts/setup.sh; fi
/usr/bin/python3 scripts/check_peer_input.py
swift build --build-tests
if [ "$fast" = 0 ]; then
  # One test at a time: the tests measure frame rates and latencies on a 2-core machine, and
  # several start servers and real clients; side by side they starve each other.
  swift test --skip-build --no-parallel "$@"
  exit
fi

# The fast set. Swift 6.3's `swift test --filter` matches test IDs, not tags, so the tags are
# read from Swift Testing's own listing (its event stream, which carries each suite's and
# test's tags) and the IDs that carry `.fast` become the filter; a suite's tag takes in its tests.
xctest="$(swift build --show-bin-path)/LiveRelayPackageTests.xctest"
[ -x "$xctest" ] || { echo "test.sh: no test binary at $xctest" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SWT_EXPERIMENTAL_EVENT_STREAM_FIELDS_ENABLED=1 "$xctest" --testing-library swift-testing --list-tests \
  --event-stream-output-path "$work/tests.jsonl" --event-stream-version 0 >/dev/null
/usr/bin/python3 - "$work/tests.jsonl" "$work/filters" <<'EOF'
import json, sys
tests = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "test":
        p = r["payload"]
        tests[p["id"]] = (p["kind"], set(p.get("tags") or p.get("_tags") or []))
tagged = sorted(i for i, (_, tags) in tests.items() if ".fast" in tags)
if not tagged:
    sys.exit(f"test.sh: none of {len(tests)} tests carries the .fast tag (has the listing lost its tags?)")
marked = set(tagged)
def fast(i):
    parts = i.split("/")
    return any("/".join(parts[:n]) in marked for n in range(1, len(parts) + 1))
functions = [i for i, (kind, _) in tests.items() if kind == "function"]
chosen = sum(1 for i in functions if fast(i))
print(f"test.sh: {chosen} of {len(functions)} tests are fast ({len(tagged)} suites and tests tagged .fast)")
meta = set("\\^$.|?*+()[]{}")
with open(sys.argv[2], "w") as out:
    for i in tagged:
        out.write("--filter\n^" + "".join("\\" + c if c in meta else c for c in i) + "$\n")
EOF
mapfile -t filters < "$work/filters"

# The run, every exec traced: the test binary's own is the only one allowed. LIVERELAY_TEST_FAST
# makes TestSupport's server helpers refuse at once, naming what the test wanted.
export LIVERELAY_TEST_FAST=1
start=$(date +%s)
status=0
strace -f -qq -s 120 --seccomp-bpf -e trace=execve,execveat -e signal=none -o "$work/exec.log" \
  "$xctest" --testing-library swift-testing --no-parallel "${filters[@]}" "$@" || status=$?
seconds=$(( $(date +%s) - start ))
started=$(grep -E 'execve(at)?\(' "$work/exec.log" | grep -vF "execve(\"$xctest\"," || true)
if [ -n "$started" ]; then
  echo "test.sh: the fast run started processes (a test that does is not .fast):" >&2
  printf '%s\n' "$started" | cut -c1-300 | head -n 40 >&2
  status=1
fi
echo "test.sh: fast run $seconds s"
if [ "$seconds" -gt 180 ]; then
  echo "test.sh: the fast run took $seconds s, more than 3 minutes" >&2
  status=1
fi
exit "$status"
