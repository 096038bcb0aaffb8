#!/usr/bin/python3
"""A real RTSP server for LiveRelay's tests and bench: gst-rtsp-server from Debian.

Usage: rtsp_server.py --port PORT [--mount PATH=LAUNCH]... [--record PATH]... [--auth USER:PASS [--digest]]

Each --mount serves a GStreamer launch line to pulling clients (UDP and TCP). Each --record
accepts a publisher (ANNOUNCE/RECORD) at PATH and relays it to viewers at PATH too.
--auth makes every mount ask for USER:PASS (Basic, or Digest with --digest).
Prints "ready PORT" on stdout once listening. Run with Debian's /usr/bin/python3 (needs gi).
"""
import argparse
import signal
import sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import Gst, GstRtspServer, GLib  # noqa: E402

DEFAULT = ("( videotestsrc is-live=true pattern=ball ! video/x-raw,width=640,height=360,framerate=30/1 "
           "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=1000 "
           "! rtph264pay name=pay0 pt=96 config-interval=1 )")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--address", default="127.0.0.1")
    ap.add_argument("--mount", action="append", default=[])
    ap.add_argument("--record", action="append", default=[])
    ap.add_argument("--auth")
    ap.add_argument("--digest", action="store_true")
    args = ap.parse_args()
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address(args.address)
    server.set_service(str(args.port))
    mounts = server.get_mount_points()
    if args.auth:
        user, password = args.auth.split(":", 1)
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "viewer")
        if args.digest:
            from gi.repository import GstRtsp  # noqa: E402
            auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
            auth.add_digest(user, password, token)
        else:
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        server.set_auth(auth)
    specs = args.mount or ["/test=" + DEFAULT]
    for spec in specs:
        path, launch = spec.split("=", 1)
        f = GstRtspServer.RTSPMediaFactory()
        f.set_launch(launch)
        f.set_shared(True)
        if args.auth:
            f.add_role_from_structure(Gst.Structure.from_string(
                "viewer, media.factory.access=(boolean)true, media.factory.construct=(boolean)true")[0])
        mounts.add_factory(path, f)
    for path in args.record:
        f = GstRtspServer.RTSPMediaFactory()
        f.set_transport_mode(GstRtspServer.RTSPTransportMode.RECORD)
        f.set_launch("( rtph264depay name=depay0 ! fakesink )")
        mounts.add_factory(path, f)
    if server.attach(None) == 0:
        print("cannot listen on port %d" % args.port, file=sys.stderr)
        sys.exit(1)
    loop = GLib.MainLoop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    print("ready %d" % args.port, flush=True)
    loop.run()


if __name__ == "__main__":
    main()
