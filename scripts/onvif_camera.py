#!/usr/bin/env python3
"""An ONVIF camera for tests and the bench: ipycam 1.3.0's own ONVIF services (device, media, PTZ),
run as they are, with no video of their own: GetStreamUri points at an RTSP server run beside it
(rtsp_server.py with mounts /main 640x360 and /sub 320x180). ipycam's PTZ answers use an
undeclared `ptz:` prefix and its GetStatus leaves {{...}} placeholders; LiveRelay must cope.
Usage (from setup.sh's venv, in a temporary directory: presets go to ./ptz_presets.json):
  /opt/liverelay-venv/bin/python onvif_camera.py --http-port P --rtsp-port R [--user U --password W] [--discovery]
SOAP: POST http://127.0.0.1:P/onvif/{device,media,ptz}_service. --discovery answers WS-Discovery on
UDP 3702 (a fixed port: run it in a network namespace of its own). Prints the device URL when ready."""
import argparse, socketserver, types
from ipycam import CameraConfig, IPCameraHTTPHandler, ONVIFService, PTZController, WSDiscoveryServer

ap = argparse.ArgumentParser()
ap.add_argument("--http-port", type=int, required=True)
ap.add_argument("--rtsp-port", type=int, required=True)
ap.add_argument("--user", default="")
ap.add_argument("--password", default="")
ap.add_argument("--discovery", action="store_true")
a = ap.parse_args()
cfg = CameraConfig(local_ip="127.0.0.1", onvif_port=a.http_port, rtsp_port=a.rtsp_port, main_stream_name="main",
                   sub_stream_name="sub", main_width=640, main_height=360, main_fps=30, sub_width=320, sub_height=180,
                   sub_fps=30, username=a.user, password=a.password)
onvif = ONVIFService(cfg, PTZController(cfg.main_width, cfg.main_height))
IPCameraHTTPHandler.camera = types.SimpleNamespace(config=cfg, onvif=onvif)  # SOAP needs only .config and .onvif


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = daemon_threads = True


server = Server(("127.0.0.1", a.http_port), IPCameraHTTPHandler)
if a.discovery:
    WSDiscoveryServer(onvif).start()
print(cfg.onvif_url, flush=True)
server.serve_forever()
