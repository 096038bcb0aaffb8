#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs LiveRelay's main job on the built-in
# stamped test source.
#   scripts/demo.sh              a debug build: the first picture soonest (the demo's job takes
#                                about half a core either way: libx264 and FFmpeg do the work),
#                                and the build scripts/test.sh goes on from
#   scripts/demo.sh --release    an optimized build, as for production and the bench
# Further arguments go to `liverelay serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
configuration=debug
if [ "${1:-}" = "--release" ]; then configuration=release; shift; fi
bash scripts/setup.sh --demo
swift build -c "$configuration" --product liverelay
echo "Open the printed URLs in a browser (Ctrl-C stops): the wall, the public LL-HLS page, RTSP, the recordings timeline."
exec "$(swift build -c "$configuration" --show-bin-path)/liverelay" serve --config configs/demo.yaml "$@"
