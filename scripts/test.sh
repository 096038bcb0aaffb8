#!/usr/bin/env bash
# Runs LiveRelay's whole test suite: installs what the tests need (FFmpeg, gst-rtsp-server,
# nginx-rtmp …), builds, and runs `swift test`. The tests start their own servers on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build --build-tests
swift test --skip-build "$@"
