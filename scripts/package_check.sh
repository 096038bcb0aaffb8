#!/usr/bin/env bash
# Checks a LiveRelay Debian package (scripts/package.sh) where no Swift toolchain is:
#   1. a clean Debian 12 root made by debootstrap (minbase), from this machine's Debian mirror;
#   2. `apt install ./liverelay_*.deb` in it (chroot): the package and its runtime libraries;
#      `liverelay --version`; `liverelay serve` with the package's default configuration as the
#      liverelay user, and ffprobe outside the root reading its test source over RTSP and HLS;
#   3. the image dist/Dockerfile builds on that clean root (podman, runc: see
#      ../shared/TESTING-RECIPES.md), run with host networking, read the same way.
# Prints each step's time. Run as root:
#   scripts/package_check.sh dist/out/liverelay_*.deb [WORKDIR]
set -euo pipefail
deb=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-$(mktemp -d /var/tmp/liverelay-check.XXXXXX)}
mkdir -p "$work"
mirror=$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
need=()
for p in debootstrap podman runc ffmpeg; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; fi
step() { echo "package_check: $*"; }
stamp() { date +%s.%N; }
since() { python3 -c "print(f'{$(stamp) - $1:.1f} s')"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
base=$work/base root=$work/root
pids=() mounted=0 container=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$container" ] && podman --runtime runc rm -f "$container" >/dev/null 2>&1 || true
  [ "$mounted" = 1 ] && umount "$root/proc" 2>/dev/null || true
}
trap cleanup EXIT

# What a client outside reads: the test source's codec and size over RTSP, and LL-HLS's.
read_test_source() {
  local http=$1 rtsp=$2 what=$3 started=$4
  for i in $(seq 1 60); do curl -s -o /dev/null "http://127.0.0.1:$http/healthz" && break; sleep 0.5; done
  local r="" h=""
  # The stream's first picture comes a moment after the server listens: tried for 30 s.
  for i in $(seq 1 30); do
    r=$(timeout 20 ffprobe -v error -rtsp_transport tcp -select_streams v -show_entries stream=codec_name,width,height -of csv=p=0 "rtsp://127.0.0.1:$rtsp/test" 2>/dev/null || true)
    [ -n "$r" ] && break; sleep 1
  done
  h=$(timeout 30 ffprobe -v error -select_streams v -show_entries stream=codec_name,width,height -of csv=p=0 "http://127.0.0.1:$http/streams/test/hls/index.m3u8" | head -1)
  step "$what: RTSP read $r ($(since "$started") after the start); LL-HLS read $h"
  [ "$r" = "h264,1280,720" ] && [ "$h" = "h264,1280,720" ]
}

# 1. The clean root (made once per WORKDIR, kept as base.tgz), and an image of it.
t=$(stamp)
if [ ! -s "$work/base.tgz" ]; then
  rm -rf "$base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" >"$work/debootstrap.log"
  tar -C "$base" -c . | gzip -1 > "$work/base.tgz"
  rm -rf "$base"
fi
rm -rf "$root"; mkdir -p "$root"; tar -C "$root" -xzf "$work/base.tgz"
step "a clean Debian $(cat "$root/etc/debian_version") root in $(since "$t") ($(du -sh "$root" | cut -f1))"
if [ -e "$root/usr/bin/swift" ] || [ -e "$root/opt/swift" ]; then step "the root has a Swift toolchain"; exit 1; fi
t=$(stamp)
podman import "$work/base.tgz" localhost/liverelay-check-base:latest >/dev/null
step "the clean root imported as an image in $(since "$t")"

# 2. The package in the root.
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
t=$(stamp)
chroot "$root" apt-get update -qq
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >"$work/install.log"
step "apt install ./$(basename "$deb") in $(since "$t") (with its libraries)"
# (Swift's runtime reads the command line from /proc: a chroot without it is no real system.)
mount -t proc proc "$root/proc"; mounted=1
step "version: $(chroot "$root" liverelay --version | head -1)"
chroot "$root" getent passwd liverelay >/dev/null
[ "$(chroot "$root" stat -c %U /var/lib/liverelay)" = liverelay ] || { step "/var/lib/liverelay is not the liverelay user's"; exit 1; }
http=$(free_port) rtsp=$(free_port)
sed -e "s/127.0.0.1:8080/127.0.0.1:$http/" -e "s/127.0.0.1:8554/127.0.0.1:$rtsp/" "$root/etc/liverelay/liverelay.yaml" > "$root/etc/liverelay/check.yaml"
t=$(stamp)
chroot "$root" runuser -u liverelay -- liverelay serve --config /etc/liverelay/check.yaml --state-dir /var/lib/liverelay >"$work/serve.log" 2>&1 &
pids+=($!)
read_test_source "$http" "$rtsp" "the package in the root" "$t"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
umount "$root/proc"; mounted=0

# 3. The image from dist/Dockerfile on the clean root.
t=$(stamp)
ctx=$work/context; mkdir -p "$ctx"; cp "$deb" "$ctx/"
podman --runtime runc build -q --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --build-arg BASE=localhost/liverelay-check-base:latest \
  -f "$here/dist/Dockerfile" -t localhost/liverelay-check:latest "$ctx" >/dev/null
step "the image built in $(since "$t")"
http=$(free_port) rtsp=$(free_port)
container=liverelay-check-$$
sed -e "s/127.0.0.1:8080/127.0.0.1:$http/" -e "s/127.0.0.1:8554/127.0.0.1:$rtsp/" "$root/etc/liverelay/liverelay.yaml" > "$work/check.yaml"
t=$(stamp)
podman --runtime runc run -d --name "$container" --network host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
  -v "$work/check.yaml:/etc/liverelay/liverelay.yaml:ro" localhost/liverelay-check:latest >/dev/null
read_test_source "$http" "$rtsp" "the image" "$t"
step "passed"
