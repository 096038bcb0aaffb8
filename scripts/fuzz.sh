#!/usr/bin/env bash
# Fuzzes LiveRelay's input parsers with libFuzzer under AddressSanitizer:
#   scripts/fuzz.sh [SECONDS] [TARGET…]     (targets: config url hls timeline rtmp demux flvfeed rtsp mp4 webrtc evidence onvif talk; default all, 60 s each)
#   scripts/fuzz.sh hostile FACE EXCHANGES [SEED]   a hostile peer against the real serve (scripts/hostile/run.sh:
#                                                   camera, rtsp_player)
# Each target starts from fuzz/corpus/TARGET (checked in) and adds what it finds to
# .build-fuzz/corpus/TARGET; crashes are written to .build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = hostile ]; then shift; exec scripts/hostile/run.sh "$@"; fi
seconds="${1:-60}"; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(config url hls timeline rtmp demux flvfeed rtsp mp4 webrtc evidence onvif talk)
swift build --scratch-path .build-fuzz --product liverelay-fuzz \
  --sanitize=fuzzer --sanitize=address \
  -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -DFUZZING >&2
bin="$(swift build --scratch-path .build-fuzz --product liverelay-fuzz --show-bin-path \
  --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -DFUZZING)/liverelay-fuzz"
mkdir -p .build-fuzz/crashes
for t in "${targets[@]}"; do
  mkdir -p ".build-fuzz/corpus/$t"
  echo "== $t: ${seconds} s" >&2
  LIVERELAY_FUZZ_TARGET="$t" "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -artifact_prefix=".build-fuzz/crashes/$t-" ".build-fuzz/corpus/$t" "fuzz/corpus/$t" 2>&1 \
    | grep -E "^(#[0-9]+[[:space:]]+DONE|stat::|==[0-9]+==ERROR|SUMMARY|artifact_prefix)|Done [0-9]+ runs" || true
done
