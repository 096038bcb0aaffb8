#!/usr/bin/python3
"""Talks to an ONVIF camera straight, with GStreamer's rtspsrc (backchannel=onvif), as the peer
LiveRelay's talk path is measured against (after ../shared/recipes/backchannel_talk.py).

  backchannel_talk.py RTSP_URL SECONDS [tcp|udp] [--clicks]

Sends a 440 Hz tone, or with --clicks a 1 kHz click every 500 ms (audiotestsrc wave=ticks), into
the camera's backchannel (PCMU or AAC, as its SDP offers). With --clicks it prints "click UNIX_MS"
each time it hands rtspsrc a PCMU packet whose sound starts a click. Ends with "pushed ok=N".
Debian 12's rtspsrc (1.22.0) frees the sample it is handed: each gets a reference of its own."""
import audioop, ctypes, sys, time, warnings, gi
warnings.filterwarnings("ignore", category=DeprecationWarning)
gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst
Gst.init(None)
args = [a for a in sys.argv[1:] if not a.startswith("--")]
url, secs = args[0], float(args[1]); proto = args[2] if len(args) > 2 else "tcp"
clicks = "--clicks" in sys.argv
pipe = Gst.parse_launch(f"rtspsrc name=r backchannel=onvif protocols={proto} location={url} r. ! queue ! fakesink")
src, loop, state = pipe.get_by_name("r"), GLib.MainLoop(), {"ok": 0, "bad": 0, "quiet": 0}
GST = ctypes.CDLL("libgstreamer-1.0.so.0"); GST.gst_mini_object_ref.argtypes = [ctypes.c_void_p]
ENC = {"PCMU": "mulawenc ! rtppcmupay", "MPEG4-GENERIC": "voaacenc bitrate=32000 ! aacparse ! rtpmp4gpay"}

def pushed(sink, sid):
    sample = sink.emit("pull-sample")
    if clicks:
        ok, info = sample.get_buffer().map(Gst.MapFlags.READ)
        if ok:
            loud = audioop.max(audioop.ulaw2lin(bytes(info.data[12:]), 2), 2) > 2000
            sample.get_buffer().unmap(info)
            if loud and state["quiet"] >= 5: print(f"click {time.time() * 1000:.1f}", flush=True)
            state["quiet"] = 0 if loud else state["quiet"] + 1
    GST.gst_mini_object_ref(hash(sample))  # hash() of a PyGObject boxed is its C pointer
    ret = src.emit("push-backchannel-buffer", sid, sample)
    state["ok" if ret == Gst.FlowReturn.OK else "bad"] += 1
    return Gst.FlowReturn.OK

def select(src, idx, caps):
    st = caps.get_structure(0)
    if st.has_field("a-sendonly"):
        st = st.copy(); st.set_name("application/x-rtp")
        for k in [st.nth_field_name(i) for i in range(st.n_fields())]:
            if k.startswith("a-"): st.remove_field(k)
        rtp = Gst.Caps.from_string(st.to_string())
        rate, enc = st.get_value("clock-rate"), st.get_value("encoding-name")
        sound = "wave=ticks tick-interval=500000000 freq=1000 sine-periods-per-tick=5" if clicks else "freq=440"
        back = Gst.parse_launch(f"audiotestsrc is-live=true {sound} volume=0.5 samplesperbuffer={rate // 50} ! audio/x-raw,rate={rate},channels=1 ! "
                                f"{ENC[enc]} ! appsink name=out emit-signals=true sync=false")
        out = back.get_by_name("out"); out.set_property("caps", rtp)
        out.connect("new-sample", pushed, idx); back.set_state(Gst.State.PLAYING); state["back"] = back
    return True

src.connect("select-stream", select)
pipe.get_bus().add_signal_watch(); pipe.get_bus().connect("message::error", lambda b, m: (print(m.parse_error()), loop.quit()))
pipe.set_state(Gst.State.PLAYING); GLib.timeout_add(int(secs * 1000), loop.quit); loop.run()
if "back" in state: state["back"].set_state(Gst.State.NULL)
pipe.set_state(Gst.State.NULL)
print(f"pushed ok={state['ok']} not-ok={state['bad']}", flush=True)
sys.exit(0 if state["ok"] else 1)
