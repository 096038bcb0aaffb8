#!/usr/bin/env bash
# Runs LiveRelay's test suite: installs what the tests need (FFmpeg, gst-rtsp-server,
# nginx-rtmp …), checks the sources for forms a peer's bytes could trap on, builds, and runs
# `swift test`. The tests start their own servers on free ports.
#   scripts/test.sh            everything (CI)
#   scripts/test.sh --fast     the unit-test targets only (no servers, no real clients): minutes
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
bash scripts/setup.sh
/usr/bin/python3 scripts/check_peer_input.py
swift build --build-tests
# One test at a time: the tests measure frame rates and latencies on a 2-core machine, and
# several start servers and real clients; side by side they starve each other.
if [ "$fast" = 1 ]; then
  swift test --skip-build --no-parallel \
    --filter '^(WireTests|CatalogTests|AccessTests|RTSPServerTests|MediaCoreTests|IngestServerTests|RelayServerTests|RelayTests|MuxTests|DecodeTests)\.' "$@"
else
  swift test --skip-build --no-parallel "$@"
fi
