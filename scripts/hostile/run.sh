#!/usr/bin/env bash
# Runs one hostile peer long against the real `liverelay serve` (debug build: the same overflow
# and bounds traps as release, and assertions besides) and says whether
# the process survived and a good stream beside stayed live:
#   scripts/hostile/run.sh camera|rtsp_player|http_client|rtmp_publisher|srt_caller|push_origin|whip_endpoint|jwks_endpoint|webhook_receiver|webrtc_peer|onvif_camera EXCHANGES [SEED]
# The peer prints what it sent per exchange into .build-hostile/FACE-SEED.log, so a crash replays
# with the same seed. Exit 0 when serve is still running and the good stream is live.
set -euo pipefail
cd "$(dirname "$0")/../.."
face="$1"; exchanges="$2"; seed="${3:-$RANDOM}"
# LIVERELAY_BIN: a copy of the binary to run (so that rebuilding meanwhile does not touch it).
if [ -z "${LIVERELAY_BIN:-}" ]; then
  swift build --product liverelay >&2
  bin="$(swift build --show-bin-path)/liverelay"
else
  bin="$LIVERELAY_BIN"
fi
out=.build-hostile; mkdir -p "$out"
free() { /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
http=$(free); peer=$(free)
conf="$out/$face-$seed.yaml"; log="$out/$face-$seed.log"
case "$face" in
  camera)
    { echo "streams:"; echo "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}"
      for i in $(seq 0 15); do
        t=$([ $((i % 2)) = 0 ] && echo tcp || echo udp)
        echo "  cam$i: {source: \"rtsp://127.0.0.1:$peer/cam$i\", transport: $t, open_timeout: 2s, read_timeout: 1s, preview: false}"
      done; } > "$conf"
    /usr/bin/python3 scripts/hostile/camera.py --port "$peer" --seed "$seed" --mutate 0.25 --play-seconds 0.4 --hangup silent --exchanges "$exchanges" > "$log" &
    ;;
  rtsp_player)
    printf 'server:\n  rtsp: {listen: "127.0.0.1:%s"}\nstreams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false}\n' "$peer" > "$conf"
    ;;
  http_client)
    printf 'streams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false, record: {path: "%s", segment_duration: 2s}}\n  cam: {source: "testsrc://?size=320x240&fps=15", hls: {variant: lowLatency}}\n  phone: {source: publish}\n' "$PWD/$out/rec-$seed" > "$conf"
    ;;
  rtmp_publisher)
    printf 'ingest:\n  rtmp: {listen: "127.0.0.1:%s", app: live}\nstreams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false}\n  phone: {source: publish, hls: {variant: fmp4}}\n' "$peer" > "$conf"
    ;;
  srt_caller)
    peer=$(/usr/bin/python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    printf 'ingest:\n  srt: {listen: "127.0.0.1:%s"}\nstreams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false}\n  cam: {source: publish, hls: {variant: mpegts}}\n' "$peer" > "$conf"
    ;;
  push_origin)
    # Eight streams push LL-HLS (parts, playlists, deletes) to the one hostile origin.
    { echo "streams:"; echo "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}"
      for i in $(seq 0 7); do
        echo "  cam$i: {source: \"testsrc://?size=160x120&fps=15&gop=15\", preview: false, hls: {variant: lowLatency, segment_duration: 1s, part_duration: 0.2s, push: \"http://127.0.0.1:$peer/live/cam$i/\"}}"
      done; } > "$conf"
    /usr/bin/python3 scripts/hostile/push_origin.py --port "$peer" --seed "$seed" --exchanges "$exchanges" > "$log" &
    ;;
  whip_endpoint)
    # Eight WHIP push forwards offer to the one hostile endpoint (and its noisy UDP candidate).
    { echo "streams:"; echo "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}"
      for i in $(seq 0 7); do
        echo "  cam$i: {source: \"testsrc://?size=160x120&fps=15&gop=15\", preview: false, forward: [{url: \"whip+http://127.0.0.1:$peer/whip/cam$i\", bearer_token: t$i}]}"
      done; } > "$conf"
    /usr/bin/python3 scripts/hostile/whip_endpoint.py --port "$peer" --seed "$seed" --exchanges "$exchanges" > "$log" &
    ;;
  jwks_endpoint)
    printf 'auth:\n  anonymous: [read]\n  jwt: {jwks: "http://127.0.0.1:%s/jwks.json", refresh: 0.1s}\nstreams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false}\n' "$peer" > "$conf"
    /usr/bin/python3 scripts/hostile/jwks_endpoint.py --port "$peer" --relay "$http" --seed "$seed" --exchanges "$exchanges" > "$log" &
    ;;
  webhook_receiver)
    # Every event of four recording streams POSTed to the hostile receiver (push_origin.py answers
    # any method), two attempts each, a second at most per attempt.
    { printf 'hooks:\n  webhooks: [{url: "http://127.0.0.1:%s/hook", secret: "hostile-secret-0123", attempts: 2, timeout: 1s}]\n' "$peer"
      echo "streams:"; echo "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}"
      for i in $(seq 0 3); do
        echo "  cam$i: {source: \"testsrc://?size=160x120&fps=15&gop=15\", preview: false, record: {path: \"$PWD/$out/rec-$seed/cam$i\", segment_duration: 1s}}"
      done; } > "$conf"
    /usr/bin/python3 scripts/hostile/push_origin.py --port "$peer" --seed "$seed" --exchanges "$exchanges" > "$log" &
    ;;
  webrtc_peer)
    # Mutated WHEP offers, then mutated STUN, DTLS, RTP and RTCP on the shared UDP port and in
    # ICE-TCP frames, against one session of its own (EXCHANGES datagrams and as many frames).
    printf 'server:\n  limits: {per_client: {viewers: 8}}\nstreams:\n  good: {source: "testsrc://?size=320x240&fps=15", preview: false}\n  cam: {source: "testsrc://?size=320x240&fps=15&gop=15", preview: false}\n' > "$conf"
    ;;
  onvif_camera)
    # Eight onvif:// streams resolve through the hostile camera (mutated SOAP and HTTP), while
    # operators steer them through the PTZ API the whole time (below).
    { echo "streams:"; echo "  good: {source: \"testsrc://?size=320x240&fps=15\", preview: false}"
      for i in $(seq 0 7); do
        echo "  cam$i: {source: \"onvif://admin$i:secret@127.0.0.1:$peer/\", open_timeout: 2s, read_timeout: 1s, preview: false}"
      done; } > "$conf"
    /usr/bin/python3 scripts/hostile/onvif_camera.py --port "$peer" --seed "$seed" --exchanges "$exchanges" > "$log" &
    ;;
  *) echo "faces: camera rtsp_player http_client rtmp_publisher srt_caller push_origin whip_endpoint jwks_endpoint webhook_receiver webrtc_peer onvif_camera" >&2; exit 2 ;;
esac
peerpid=${!:-}
"$bin" serve --config "$conf" --listen "127.0.0.1:$http" --state-dir "$out/$face-$seed.state" > "$out/$face-$seed.serve.log" 2>&1 &
serve=$!
trap 'kill $serve ${peerpid:-} 2>/dev/null || true' EXIT
sleep 3
start=$(date +%s)
if [ "$face" = rtsp_player ]; then
  /usr/bin/python3 scripts/hostile/rtsp_player.py --port "$peer" --stream good --seed "$seed" --exchanges "$exchanges" --read-seconds 0.1 > "$log"
elif [ "$face" = rtmp_publisher ]; then
  /usr/bin/python3 scripts/hostile/rtmp_publisher.py --port "$peer" --stream phone --seed "$seed" --exchanges "$exchanges" > "$log"
elif [ "$face" = srt_caller ]; then
  /usr/bin/python3 scripts/hostile/srt_caller.py --port "$peer" --stream cam --read-stream good --seed "$seed" --exchanges "$exchanges" > "$log"
elif [ "$face" = webrtc_peer ]; then
  /usr/bin/python3 scripts/hostile/webrtc_peer.py --whep "http://127.0.0.1:$http/streams/cam/whep" --offers "http://127.0.0.1:$http/streams/cam/whep" \
    --offer-count $(( exchanges / 10 )) --count "$exchanges" --seed "$seed" --log-exchanges > "$log" \
    || { echo "webrtc_peer seed $seed: a correct check went unanswered or wrong; see $log"; exit 1; }
elif [ "$face" = http_client ]; then
  /usr/bin/python3 scripts/hostile/http_client.py --port "$http" --stream cam --seed "$seed" --exchanges "$exchanges" > "$log"
elif [ "$face" = onvif_camera ]; then
  # Operators steering the hostile cameras: status, moves and new presets, four at a time.
  while kill -0 "$peerpid" 2>/dev/null && kill -0 "$serve" 2>/dev/null; do
    pids=()
    for i in 0 1 2 3; do
      curl -s -m 30 -o /dev/null "http://127.0.0.1:$http/api/streams/cam$i/ptz" & pids+=($!)
      curl -s -m 30 -o /dev/null -X POST --data-binary '{"action": "move", "pan": 0.5}' "http://127.0.0.1:$http/api/streams/cam$((i + 4))/ptz" & pids+=($!)
    done
    wait "${pids[@]}" || true
  done
  kill "$peerpid" 2>/dev/null || true
else
  while kill -0 "$peerpid" 2>/dev/null && kill -0 "$serve" 2>/dev/null; do sleep 2; done
  kill "$peerpid" 2>/dev/null || true
fi
seconds=$(( $(date +%s) - start ))
done_exchanges=$(grep -c '^exchange ' "$log" || true)
state=$(curl -s --max-time 5 "http://127.0.0.1:$http/api/streams/good" | /usr/bin/python3 -c 'import json,sys;print(json.load(sys.stdin)["stream"]["state"])' 2>/dev/null || echo none)
if kill -0 "$serve" 2>/dev/null && [ "$state" = live ]; then
  echo "$face seed $seed: $done_exchanges exchanges logged in ${seconds} s; serve running, good stream live"
else
  echo "$face seed $seed: serve STOPPED or good stream $state after $done_exchanges exchanges; see $log and $out/$face-$seed.serve.log"
  exit 1
fi
