"""WHIP/WHEP signalling for GStreamer's webrtcbin, shared by whep_gst.py and whip_gst.py: when
webrtcbin needs negotiating (once), make the offer, POST it to the endpoint, set the answer.
"""
import threading, urllib.request

from gi.repository import GLib, Gst, GstSdp, GstWebRTC


def negotiate(webrtc, url, out, on_error, authorization=None):
    """Wires `webrtc` to offer to `url` once. The answer's status and Location go into `out`
    (`status`, `location`); a failed POST calls `on_error(message)` on the main loop."""
    def on_answer(text):
        ok, sdp = GstSdp.SDPMessage.new_from_text(text)
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        webrtc.emit("set-remote-description", answer, Gst.Promise.new())

    def post(offer_text):
        try:
            req = urllib.request.Request(url, data=offer_text.encode(), method="POST", headers={"Content-Type": "application/sdp"})
            if authorization:
                req.add_header("Authorization", authorization)
            with urllib.request.urlopen(req, timeout=5) as r:
                out["status"], out["location"] = r.status, r.headers.get("Location")
                text = r.read().decode()
            GLib.idle_add(lambda: (on_answer(text), False)[1])
        except Exception as e:  # noqa: BLE001
            message = f"POST {url}: {e}"
            GLib.idle_add(lambda: (on_error(message), False)[1])

    def on_offer(promise, _):
        # Keep the reply in a variable: chained in one expression, PyGObject here segfaults.
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        webrtc.emit("set-local-description", offer, Gst.Promise.new())
        threading.Thread(target=post, args=(offer.sdp.as_text(),), daemon=True).start()

    offered = []

    def on_negotiation(_):
        # Once: a rejected section (a stream without audio) makes webrtcbin ask again.
        if offered:
            return
        offered.append(True)
        webrtc.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, None))

    webrtc.connect("on-negotiation-needed", on_negotiation)
