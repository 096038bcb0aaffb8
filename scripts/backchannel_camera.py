#!/usr/bin/python3
"""An ONVIF camera with an audio backchannel (talk back), on gst-rtsp-server's RTSPOnvifServer
(after ../shared/recipes/onvif_backchannel_camera.py). Used by the talk tests and `bench talk`.

  backchannel_camera.py PORT OUTDIR      (PORT 0: one the system picks)
  prints "rtsp://127.0.0.1:P/pcmu rtsp://127.0.0.1:P/aac" once it serves.

  /pcmu  H.264 video; backchannel PCMU/8000 -> OUTDIR/back-pcmu.ulaw (raw mu-law), and
         OUTDIR/back-pcmu.arrivals: "UNIX_MS OFFSET BYTES" per buffer as it arrives (the bench
         times each click of the talker's sound by it)
  /aac   H.264 video; backchannel AAC-LC 16 kHz mono (MPEG4-GENERIC) -> OUTDIR/back-aac.aac (ADTS)

The backchannel is offered only to clients that send "Require: www.onvif.org/ver20/backchannel".
Each client that talks overwrites the file of its mount."""
import sys, time, gi
gi.require_version("Gst", "1.0"); gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer
Gst.init(None)
port, out = sys.argv[1], sys.argv[2]
VIDEO = ("( videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=15/1 ! "
         "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 ! rtph264pay name=pay0 pt=96 config-interval=1 )")
# The element named depay_backchannel must answer a caps query with complete RTP caps (pt,
# clock-rate, encoding-name): a capsfilter in front of the real depayloader does that. Only
# string fields reach a=fmtp; the sinks need async=false.
BACK = {"pcmu": ('application/x-rtp,media=audio,payload=0,clock-rate=8000,encoding-name=PCMU',
                 'rtppcmudepay ! identity name=arrivals signal-handoffs=true', 'ulaw'),
        "aac": ('application/x-rtp,media=audio,payload=96,clock-rate=16000,encoding-name=MPEG4-GENERIC,'
                'encoding-params=(string)1,mode=(string)AAC-hbr,config=(string)1408,sizelength=(string)13,'
                'indexlength=(string)3,indexdeltalength=(string)3,streamtype=(string)5',
                'rtpmp4gdepay ! aacparse ! audio/mpeg,stream-format=adts', 'aac')}

def configure(_factory, media, name):
    el = media.get_element()
    arrivals = el.get_by_name("arrivals") if el else None
    if arrivals is None:
        return
    log = open(f"{out}/back-{name}.arrivals", "w", buffering=1)
    state = {"offset": 0}
    def handoff(_e, buf):
        n = buf.get_size()
        log.write(f"{time.time() * 1000:.1f} {state['offset']} {n}\n")
        state["offset"] += n
    arrivals.connect("handoff", handoff)

s = GstRtspServer.RTSPOnvifServer.new(); s.set_service(port); s.set_address("127.0.0.1")
for name, (caps, depay, ext) in BACK.items():
    f = GstRtspServer.RTSPOnvifMediaFactory.new()
    f.set_launch(VIDEO); f.set_shared(False); f.set_media_gtype(GstRtspServer.RTSPOnvifMedia)
    f.set_backchannel_launch(f'( capsfilter name=depay_backchannel caps="{caps}" ! {depay} ! '
                             f'filesink location={out}/back-{name}.{ext} buffer-mode=unbuffered async=false )')
    f.connect("media-configure", configure, name)
    s.get_mount_points().add_factory(f"/{name}", f)
s.attach(None)
p = s.get_bound_port()
print(f"rtsp://127.0.0.1:{p}/pcmu rtsp://127.0.0.1:{p}/aac", flush=True)
GLib.MainLoop().run()
