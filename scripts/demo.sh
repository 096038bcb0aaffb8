#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs LiveRelay's main job on the built-in
# stamped test source.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build -c release --product liverelay
echo "Open the printed URLs in a browser (Ctrl-C stops): the wall, the public LL-HLS page, RTSP, the recordings timeline."
exec .build/release/liverelay serve --config configs/demo.yaml "$@"
