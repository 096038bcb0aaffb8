#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs LiveRelay's main job on the built-in
# stamped test source.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build -c release --product liverelay
exec .build/release/liverelay probe 'testsrc://?size=1280x720&fps=30&gop=30' --frames 150 "$@"
