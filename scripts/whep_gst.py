#!/usr/bin/python3
"""A WHEP player that is not a browser: GStreamer's webrtcbin (Debian's gstreamer1.0-plugins-bad
with libnice), driven from Python. Posts its offer to a WHEP URL, sets the answer, decodes what
arrives and counts the pictures and the audio samples (and their loudest). Prints one JSON line:

    whep_gst.py URL [--seconds 5] [--user U --password P] [--no-decode] [--codec h264|h265] [--raw-gray]
    {"frames": 148, "width": 640, "height": 360, "codec": "video/x-h264", "state": "connected",
     "audio_samples": 240000, "audio_rate": 48000, "audio_channels": 2, "audio_peak": 16383}

With --raw-gray every decoded picture is written to stdout as raw 8-bit grey (the bench reads
the test source's stamp from each) and the JSON line goes to stderr instead.

Exit 0 when pictures were decoded.
"""
import argparse, array, base64, json, sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import GLib, Gst, GstWebRTC
from gst_signalling import negotiate

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--no-decode", action="store_true", help="count RTP buffers and drop them (a load client: decrypts, does not decode)")
    ap.add_argument("--codec", choices=["h264", "h265"], default="h264", help="the one video format offered")
    ap.add_argument("--raw-gray", action="store_true", help="write each picture to stdout as raw GRAY8; the JSON line to stderr")
    a = ap.parse_args()
    Gst.init(None)
    pipe = Gst.Pipeline.new("whep")
    webrtc = Gst.ElementFactory.make("webrtcbin", "w")
    webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
    pipe.add(webrtc)
    out = {"frames": 0, "width": None, "height": None, "codec": None, "state": None,
           "audio_samples": 0, "audio_rate": None, "audio_channels": None, "audio_peak": 0}
    loop = GLib.MainLoop()

    def fail(msg):
        out["error"] = msg
        loop.quit()

    def on_frame(sink):
        sample = sink.emit("pull-sample")
        if sample:
            s = sample.get_caps().get_structure(0)
            out["width"], out["height"] = s.get_value("width"), s.get_value("height")
            out["frames"] += 1
            if a.raw_gray:
                buf = sample.get_buffer()
                ok, info = buf.map(Gst.MapFlags.READ)
                if ok:
                    try:
                        sys.stdout.buffer.write(bytes(info.data))
                        sys.stdout.buffer.flush()
                    except BrokenPipeError:
                        loop.quit()
                    buf.unmap(info)
        return Gst.FlowReturn.OK

    def on_audio(sink):
        sample = sink.emit("pull-sample")
        if sample:
            s = sample.get_caps().get_structure(0)
            out["audio_rate"], out["audio_channels"] = s.get_value("rate"), s.get_value("channels")
            buf = sample.get_buffer()
            ok, info = buf.map(Gst.MapFlags.READ)
            if ok:
                pcm = array.array("h", bytes(info.data))
                buf.unmap(info)
                out["audio_samples"] += len(pcm) // max(out["audio_channels"] or 1, 1)
                if pcm:
                    out["audio_peak"] = max(out["audio_peak"], max(abs(min(pcm)), max(pcm)))
        return Gst.FlowReturn.OK

    def on_decoded(_, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        if caps.get_structure(0).get_name().startswith("audio/"):
            conv = Gst.ElementFactory.make("audioconvert")
            caps_f = Gst.ElementFactory.make("capsfilter")
            caps_f.set_property("caps", Gst.Caps.from_string("audio/x-raw,format=S16LE"))
            sink = Gst.ElementFactory.make("appsink")
            sink.set_property("emit-signals", True)
            sink.set_property("sync", False)
            sink.connect("new-sample", on_audio)
            for e in (conv, caps_f, sink):
                pipe.add(e)
                e.sync_state_with_parent()
            conv.link(caps_f)
            caps_f.link(sink)
            pad.link(conv.get_static_pad("sink"))
            return
        if not caps.get_structure(0).get_name().startswith("video/"):
            return
        conv = Gst.ElementFactory.make("videoconvert")
        sink = Gst.ElementFactory.make("appsink")
        sink.set_property("emit-signals", True)
        sink.set_property("sync", False)
        sink.connect("new-sample", on_frame)
        if a.raw_gray:
            # Packed rows (GRAY8 strides round up to 4: even widths such as 640 are packed).
            sink.set_property("caps", Gst.Caps.from_string("video/x-raw,format=GRAY8"))
        for e in (conv, sink):
            pipe.add(e)
            e.sync_state_with_parent()
        conv.link(sink)
        pad.link(conv.get_static_pad("sink"))

    def on_pad(_, pad):
        if pad.direction != Gst.PadDirection.SRC:
            return
        caps = pad.get_current_caps()
        enc = caps.get_structure(0).get_value("encoding-name") if caps else None
        if enc:
            out["codec"] = "video/x-" + enc.lower() if caps.get_structure(0).get_value("media") == "video" else out["codec"]
        if a.no_decode:
            sink = Gst.ElementFactory.make("fakesink")
            sink.set_property("signal-handoffs", True)
            sink.set_property("sync", False)
            def count(*_):
                out["frames"] += 1
            sink.connect("handoff", count)
            pipe.add(sink)
            sink.sync_state_with_parent()
            pad.link(sink.get_static_pad("sink"))
            return
        dec = Gst.ElementFactory.make("decodebin")
        dec.connect("pad-added", on_decoded)
        pipe.add(dec)
        dec.sync_state_with_parent()
        pad.link(dec.get_static_pad("sink"))

    def on_state(*_):
        out["state"] = webrtc.get_property("connection-state").value_nick

    video = ("application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,packetization-mode=(string)1,profile-level-id=(string)42e01f"
             if a.codec == "h264" else "application/x-rtp,media=video,encoding-name=H265,payload=96,clock-rate=90000")
    for kind, caps in (("video", video),
                       ("audio", "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000")):
        webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY, Gst.Caps.from_string(caps))
    auth = "Basic " + base64.b64encode(f"{a.user}:{a.password}".encode()).decode() if a.user else None
    negotiate(webrtc, a.url, out, fail, authorization=auth)
    webrtc.connect("pad-added", on_pad)
    webrtc.connect("notify::connection-state", on_state)
    pipe.set_state(Gst.State.PLAYING)
    GLib.timeout_add(int(a.seconds * 1000), loop.quit)
    loop.run()
    pipe.set_state(Gst.State.NULL)
    out.pop("location", None)
    print(json.dumps(out), file=sys.stderr if a.raw_gray else sys.stdout)
    sys.exit(0 if out["frames"] > 0 else 1)

if __name__ == "__main__":
    main()
