#!/usr/bin/env bash
# Builds LiveRelay's Debian package (amd64) from this tree, into dist/out/ (or --out DIR):
#   /usr/bin/liverelay                      the release binary, Swift's runtime linked in (the
#                                           target needs no toolchain)
#   /lib/systemd/system/liverelay.service   dist/liverelay.service, run as the liverelay user
#   /etc/liverelay/liverelay.yaml           dist/liverelay.yaml: the built-in test source (a conffile)
#   a `liverelay` system user and /var/lib/liverelay (postinst), removed by `apt purge`
# Its dependencies are Debian's runtime libraries the binary links (FFmpeg's, libsrt, OpenSSL,
# libsrtp2), as dpkg-shlibdeps finds them; no -dev package.
#   scripts/package.sh [--out DIR] [--skip-build]
# Install: apt install ./liverelay_VERSION_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist/out build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --skip-build) build=0; shift ;;
    *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$build" = 1 ]; then
  swift build -c release --static-swift-stdlib --product liverelay
fi
bin=.build/release/liverelay
[ -x "$bin" ] || { echo "package.sh: no $bin (build it, or drop --skip-build)" >&2; exit 1; }
# The Swift runtime is in the binary: nothing of the toolchain may be asked for at run time.
if ldd "$bin" | grep -q -E "libswift|libFoundation|/opt/swift"; then
  echo "package.sh: $bin links Swift's runtime dynamically; build with --static-swift-stdlib" >&2; exit 1
fi
version="0.$(git rev-list --count HEAD)+g$(git rev-parse --short=10 HEAD)"
stage=$(mktemp -d) work=$(mktemp -d)
trap 'rm -rf "$stage" "$work"' EXIT
install -D -m 0755 "$bin" "$stage/usr/bin/liverelay"
strip --strip-debug "$stage/usr/bin/liverelay"
install -d "$stage/lib/systemd/system"
sed 's|/usr/local/bin/liverelay|/usr/bin/liverelay|g' dist/liverelay.service > "$stage/lib/systemd/system/liverelay.service"
chmod 0644 "$stage/lib/systemd/system/liverelay.service"
install -D -m 0644 dist/liverelay.yaml "$stage/etc/liverelay/liverelay.yaml"
install -D -m 0644 README.md "$stage/usr/share/doc/liverelay/README.md"
install -d "$stage/DEBIAN"
install -m 0755 dist/debian/postinst dist/debian/prerm dist/debian/postrm "$stage/DEBIAN/"
echo /etc/liverelay/liverelay.yaml > "$stage/DEBIAN/conffiles"
# The runtime libraries' packages, as dpkg-shlibdeps reads them from the binary.
mkdir -p "$work/debian"
printf 'Source: liverelay\n\nPackage: liverelay\nArchitecture: amd64\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O "$stage/usr/bin/liverelay" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: liverelay
Version: $version
Architecture: amd64
Maintainer: LiveRelay <liverelay@localhost>
Installed-Size: $size
Depends: $depends, passwd, ca-certificates
Section: video
Priority: optional
Homepage: https://github.com/liverelay/liverelay
Description: live video relay with the lowest latency a user can get
 Takes live video from cameras and phones (RTSP, RTMP, SRT, WHIP, HLS upload)
 and relays it to many outputs at once: the ops wall, HLS and LL-HLS, WebRTC,
 RTSP, SRT, recordings, forwards and renditions.
CONTROL
mkdir -p "$out"
deb="$out/liverelay_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
