#!/usr/bin/env bash
# Runs LiveRelay's test suite: checks the sources for forms a peer's bytes could trap on, builds
# the tests (`swift build --build-tests`) and runs them.
#   scripts/test.sh            everything (CI): installs what the tests need first (FFmpeg,
#                              gst-rtsp-server, nginx-rtmp, Chromium … scripts/setup.sh); the
#                              tests start their own servers on free ports. Two passes: the
#                              tests side by side (at most $LIVERELAY_TEST_WIDTH at once, 3 by
#                              default: most of a test's time is waiting for a server, a client
#                              or a timer, and each test waits on threads of its own,
#                              TestSupport's `.ownThreads`), then the tests tagged `.exclusive`
#                              (a rate, latency or deadline that others' load would distort) one
#                              at a time
#   scripts/test.sh --fast     the tests tagged `.fast` (Swift Testing tags, Tests/*/Tags.swift),
#                              in under 3 minutes; installs only what building needs
#                              (scripts/setup.sh --build). They start no server and no process:
#                              every exec of the run is traced (strace), and one besides the test
#                              binary fails the run, as does a run over 3 minutes.
# Further arguments go to the test binary (e.g. `--filter REGEX`, `--skip REGEX`, `--verbose`;
# with --fast a `--filter` of your own adds tests to the fast set, it does not narrow it).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
if [ "$fast" = 1 ]; then bash scripts/setup.sh --build; else bash scripts/setup.sh; fi
/usr/bin/python3 scripts/check_peer_input.py
swift build --build-tests

xctest="$(swift build --show-bin-path)/LiveRelayPackageTests.xctest"
[ -x "$xctest" ] || { echo "test.sh: no test binary at $xctest" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Swift 6.3's `--filter` matches test IDs, not tags, so the tags are read from Swift Testing's
# own listing (its event stream, which carries each suite's and test's tags): `tagged TAG FLAG`
# writes `FLAG ^ID$` for each suite or test that carries TAG (a suite's tag takes in its tests).
SWT_EXPERIMENTAL_EVENT_STREAM_FIELDS_ENABLED=1 "$xctest" --testing-library swift-testing --list-tests \
  --event-stream-output-path "$work/tests.jsonl" --event-stream-version 0 >/dev/null
tagged() {
  /usr/bin/python3 - "$work/tests.jsonl" "$1" "$2" <<'PY'
import json, sys
listing, tag, flag = sys.argv[1], "." + sys.argv[2], sys.argv[3]
tests = {}
for line in open(listing):
    r = json.loads(line)
    if r.get("kind") == "test":
        p = r["payload"]
        tests[p["id"]] = (p["kind"], set(p.get("tags") or p.get("_tags") or []))
tagged = sorted(i for i, (_, tags) in tests.items() if tag in tags)
if not tagged:
    sys.exit(f"test.sh: none of {len(tests)} tests carries the {tag} tag (has the listing lost its tags?)")
marked = set(tagged)
def chosen(i):
    parts = i.split("/")
    return any("/".join(parts[:n]) in marked for n in range(1, len(parts) + 1))
functions = [i for i, (kind, _) in tests.items() if kind == "function"]
print(f"test.sh: {sum(1 for i in functions if chosen(i))} of {len(functions)} tests are {tag} "
      f"({len(tagged)} suites and tests tagged)", file=sys.stderr)
meta = set("\\^$.|?*+()[]{}")
for i in tagged:
    print(flag)
    print("^" + "".join("\\" + c if c in meta else c for c in i) + "$")
PY
}

if [ "$fast" = 0 ]; then
  mapfile -t exclusive < <(tagged exclusive --filter)
  mapfile -t others < <(tagged exclusive --skip)
  [ "${#exclusive[@]}" -gt 0 ] || { echo "test.sh: no .exclusive tests listed" >&2; exit 1; }
  start=$(date +%s)
  status=0
  echo "test.sh: side by side, at most ${LIVERELAY_TEST_WIDTH:-3} at once"
  "$xctest" --testing-library swift-testing --experimental-maximum-parallelization-width "${LIVERELAY_TEST_WIDTH:-3}" \
    "${others[@]}" "$@" || status=$?
  middle=$(date +%s)
  echo "test.sh: the .exclusive tests, one at a time"
  "$xctest" --testing-library swift-testing --no-parallel "${exclusive[@]}" "$@" || status=$?
  end=$(date +%s)
  echo "test.sh: side by side $(( middle - start )) s, one at a time $(( end - middle )) s, in all $(( end - start )) s"
  exit "$status"
fi

# The fast run, every exec traced: the test binary's own is the only one allowed.
# LIVERELAY_TEST_FAST makes TestSupport's server helpers refuse at once, naming what the test wanted.
mapfile -t filters < <(tagged fast --filter)
[ "${#filters[@]}" -gt 0 ] || { echo "test.sh: no .fast tests listed" >&2; exit 1; }
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
