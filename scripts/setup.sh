#!/usr/bin/env bash
# Installs everything LiveRelay needs to build, run and test on Debian 12 (as root).
# Idempotent: packages already installed are skipped quickly.
#   scripts/setup.sh           everything: build, run, and every test and bench
#   scripts/setup.sh --demo    what building and the demo need (scripts/demo.sh): the build
#                              packages, ffmpeg (the demo's field unit), hls.js for the watch page
#   scripts/setup.sh --build   only what building and the fast tests need (scripts/test.sh --fast)
set -euo pipefail

BUILD_PACKAGES=(
  # build: FFmpeg's libraries through pkg-config
  pkg-config libavformat-dev libavcodec-dev libswscale-dev libswresample-dev libavutil-dev
  # build: libsrt (the build FFmpeg links) for the one-port SRT ingest
  libsrt-gnutls-dev
  # build: libxml2 for ONVIF's SOAP answers and WS-Discovery (Wire's XMLTree)
  libxml2-dev
  # build: WebRTC's DTLS (OpenSSL) and SRTP (libsrtp2)
  libssl-dev libsrtp2-dev
  # scripts/test.sh: the source check and the fast set's tags (python3); the fast run's every
  # exec traced (strace)
  python3 strace
)
PACKAGES=(
  "${BUILD_PACKAGES[@]}"
  # real clients and encoders for tests and the bench
  ffmpeg
  # real RTSP server for tests: gst-rtsp-server through Python GObject introspection
  python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly
  gstreamer1.0-plugins-bad gstreamer1.0-libav
  # a WHEP player that is not a browser: GStreamer's webrtcbin (libnice, Python bindings)
  gstreamer1.0-nice gir1.2-gst-plugins-bad-1.0
  # a TURN server for the WebRTC relay test (coturn; not started as a service)
  coturn
  # real RTMP server (and HTTP origin) for tests; stunnel in front of it is the RTMPS endpoint
  nginx libnginx-mod-rtmp stunnel4
  # an SRT reader that is neither FFmpeg nor GStreamer (srt-live-transmit)
  srt-tools
  # the hostile JWKS endpoint signs its tokens (scripts/hostile/jwks_endpoint.py)
  python3-cryptography
  # real browser for the web pages (preview, HLS players): headless Chromium driven by Selenium
  chromium chromium-driver python3-selenium
  # VLC as an HLS player (runs as nobody: it refuses root)
  vlc-bin vlc-plugin-base
  # impaired-network bench runs (this kernel has no netem): iptables + an NFQUEUE delayer
  iptables libnetfilter-queue-dev python3-dev gcc
  # misc tools used by tests
  procps curl
  # HTTP load (h2load, HTTP/1.1 and HTTP/2) for `bench access`
  nghttp2-client
  sqlite3
  # systemd-analyze verify on dist/liverelay.service; jq reads the JSON logs in a test
  systemd jq
  # the OpenAPI document checked against real responses (JSON Schema 2020-12)
  python3-jsonschema
  # the fleet's shared catalog: tests and `bench fleet` start their own server (no system cluster);
  # ss tells which process reads a camera
  postgresql iproute2
)

build_only=0 demo=0
if [ "${1:-}" = "--build" ]; then build_only=1; PACKAGES=("${BUILD_PACKAGES[@]}"); fi
if [ "${1:-}" = "--demo" ]; then demo=1; PACKAGES=("${BUILD_PACKAGES[@]}" ffmpeg); fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Keep Debian's nginx package from starting a system-wide server on install.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$build_only" = 1 ]; then echo "setup: the packages for building present"; exit 0; fi
# The NFQUEUE delayer's Python binding (PyPI only); needed by `bench latency --impair` alone.
if [ "$demo" = 0 ] && ! /usr/bin/python3 -c "import netfilterqueue" 2>/dev/null; then
  /usr/bin/python3 -m pip install -q --break-system-packages NetfilterQueue==1.1.0 \
    || echo "setup: NetfilterQueue not installed; bench latency --impair will say so" >&2
fi
# ipycam, an ONVIF camera someone else wrote (PyPI only; OpenCV 5 needs numpy 2, newer than
# Debian's): its own venv, for the ONVIF tests and bench (scripts/onvif_camera.py).
if [ "$demo" = 0 ] && ! /opt/liverelay-venv/bin/python -c "import ipycam" 2>/dev/null; then
  { /usr/bin/python3 -m venv /opt/liverelay-venv \
    && /opt/liverelay-venv/bin/pip install -q --no-deps ipycam==1.3.0 \
    && /opt/liverelay-venv/bin/pip install -q numpy opencv-python-headless; } \
    || echo "setup: ipycam not installed; the ONVIF tests will fail" >&2
fi
# hls.js for the public watch page (a copy from PyPI's gradio wheel; never committed).
if [ ! -s /var/lib/liverelay/assets/hls.mjs ]; then
  /usr/bin/python3 "$(dirname "$0")/hlsjs_page.py" /var/lib/liverelay/assets \
    || echo "setup: hls.js not fetched; the watch page will use the browser's own HLS" >&2
fi
[ "$demo" = 1 ] && echo "setup: the packages for building and the demo present" || echo "setup: all packages present"
