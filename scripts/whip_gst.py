#!/usr/bin/python3
"""A WHIP publisher that is not a browser: GStreamer's webrtcbin sending a test picture
(H.264 by x264enc or H.265 by x265enc), driven from Python. Posts its offer to a WHIP URL, sets
the answer and sends for SECONDS. Prints one JSON line:

    whip_gst.py URL [--codec h264|h265] [--seconds 8] [--size 640x360] [--bearer TOKEN]
    {"state": "connected", "status": 201, "location": "/streams/x/whip/…", "codec": "H265"}

Exit 0 when the session connected.
"""
import argparse, json, sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import GLib, Gst  # noqa: E402
from gst_signalling import negotiate  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--codec", choices=["h264", "h265"], default="h265")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--bearer")
    a = ap.parse_args()
    w, h = a.size.split("x")
    Gst.init(None)
    enc = ("x265enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=800 ! video/x-h265,profile=main ! rtph265pay config-interval=-1 pt=96"
           if a.codec == "h265" else
           "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=800 ! video/x-h264,profile=constrained-baseline ! rtph264pay config-interval=-1 pt=102")
    pipe = Gst.parse_launch(f"videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width={w},height={h},framerate=30/1 ! {enc} "
                            "! application/x-rtp,media=video ! webrtcbin name=w bundle-policy=max-bundle")
    webrtc = pipe.get_by_name("w")
    out = {"state": None, "status": None, "location": None, "codec": a.codec.upper()}
    loop = GLib.MainLoop()

    def fail(msg):
        out["error"] = msg
        loop.quit()

    def on_state(*_):
        s = webrtc.get_property("connection-state").value_nick
        if out["state"] != "connected":
            out["state"] = s

    negotiate(webrtc, a.url, out, fail, authorization="Bearer " + a.bearer if a.bearer else None)
    webrtc.connect("notify::connection-state", on_state)
    pipe.set_state(Gst.State.PLAYING)
    GLib.timeout_add(int(a.seconds * 1000), loop.quit)
    loop.run()
    pipe.set_state(Gst.State.NULL)
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["state"] == "connected" else 1)


if __name__ == "__main__":
    main()
