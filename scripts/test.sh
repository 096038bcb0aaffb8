#!/usr/bin/env bash
# Runs LiveRelay's whole test suite: installs what the tests need (FFmpeg, gst-rtsp-server,
# nginx-rtmp …), builds, and runs `swift test`. The tests start their own servers on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build --build-tests
# One test at a time: the tests measure frame rates and latencies on a 2-core machine, and
# several start servers and real clients; side by side they starve each other.
swift test --skip-build --no-parallel "$@"
