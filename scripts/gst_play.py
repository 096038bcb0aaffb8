#!/usr/bin/python3
"""Plays a URL with GStreamer (souphttpsrc ! hlsdemux ! decodebin for HLS, else uridecodebin)
and counts decoded video frames, bounded in time. Prints one JSON line; exits 1 on a bus
ERROR or too few frames.

  gst_play.py URL [--frames 60] [--timeout 20]
"""
import argparse, json, sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst, GLib

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    Gst.init(None)
    if a.url.split("?")[0].endswith(".m3u8"):
        launch = f'souphttpsrc location="{a.url}" ! hlsdemux ! decodebin ! videoconvert ! fakesink name=sink signal-handoffs=true sync=false'
    else:
        launch = f'uridecodebin uri="{a.url}" ! videoconvert ! fakesink name=sink signal-handoffs=true sync=false'
    pipeline = Gst.parse_launch(launch)
    state = {"frames": 0, "error": None}
    loop = GLib.MainLoop()

    def on_handoff(*_):
        state["frames"] += 1
        if state["frames"] >= a.frames:
            GLib.idle_add(loop.quit)
    pipeline.get_by_name("sink").connect("handoff", on_handoff)

    def on_message(_, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, _dbg = msg.parse_error()
            state["error"] = err.message
            loop.quit()
        elif msg.type == Gst.MessageType.EOS:
            loop.quit()
    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    GLib.timeout_add(int(a.timeout * 1000), loop.quit)
    pipeline.set_state(Gst.State.PLAYING)
    loop.run()
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps(state))
    sys.exit(0 if state["error"] is None and state["frames"] >= a.frames else 1)

if __name__ == "__main__":
    main()
