#!/usr/bin/python3
"""LiveRelay's CPU per reader of one stream, SRT readers against RTSP-out readers, in one run, and
a peer: `liverelay serve` (the binary given) with a 640x360 30 fps 1 Mbit/s test source, its CPU idle, then
with N srt-live-transmit readers (libsrt's own tool, each writing to a file), then with N RTSP
readers over TCP (one asyncio client here: DESCRIBE, SETUP interleaved, PLAY, read and drop), each
measured over the same seconds from /proc. The peer: GStreamer relaying the same stream (read from
LiveRelay's RTSP out, remuxed into MPEG-TS, no re-encoding) to N srt-live-transmit readers from its
srtsink in listener mode, its CPU idle and with them. The SRT readers are started 50 ms apart
(srtsink turns away callers that come closer together), and each SRT figure is per reader that
got bytes while measured. Prints one JSON line.

    scripts/readers_cpu.py .build/release/liverelay [--readers 100] [--seconds 10]
"""
import argparse, asyncio, json, os, re, shutil, socket, subprocess, sys, tempfile, time

def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def measure(pid, seconds):
    a = cpu_seconds(pid); time.sleep(seconds); return (cpu_seconds(pid) - a) / seconds

async def rtsp_reader(port, stop):
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        url = f"rtsp://127.0.0.1:{port}/cam"
        async def ask(req):
            w.write(req.encode()); await w.drain()
            head = await r.readuntil(b"\r\n\r\n")
            n = int(re.search(rb"Content-Length: *(\d+)", head, re.I).group(1)) if re.search(rb"Content-Length", head, re.I) else 0
            body = await r.readexactly(n) if n else b""
            return head, body
        _, sdp = await ask(f"DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n")
        controls = re.findall(rb"a=control:(\S+)", sdp)
        track = controls[-1].decode() if controls else "streamid=0"
        setup = track if track.startswith("rtsp://") else f"{url}/{track}"
        head, _ = await ask(f"SETUP {setup} RTSP/1.0\r\nCSeq: 2\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n")
        session = re.search(rb"Session: *([^;\r]+)", head).group(1).decode()
        w.write(f"PLAY {url} RTSP/1.0\r\nCSeq: 3\r\nSession: {session}\r\n\r\n".encode()); await w.drain()
        while not stop.is_set():
            if not await r.read(65536): break
        w.close()
    except Exception as e:
        print(f"rtsp reader: {e}", file=sys.stderr)

def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]

def srt_phase(pid, url, readers, seconds):
    """`pid`'s CPU (cores) while `readers` srt-live-transmit readers read `url`; how many of them
    got bytes over the same seconds (srtsink turns callers away that come too close together,
    so they are started 50 ms apart and counted), and their mean bytes per second. Each reader
    writes to a file, in /dev/shm when it has room for the phase's ~150 MB."""
    shm = "/dev/shm"
    room = os.path.isdir(shm) and shutil.disk_usage(shm).free > 400 << 20
    out = tempfile.mkdtemp(prefix="srt-readers", dir=shm if room else None)
    files = [os.path.join(out, f"{i}.ts") for i in range(readers)]
    procs = []
    try:
        for f in files:
            with open(f, "wb") as sink:
                procs.append(subprocess.Popen(["srt-live-transmit", "-q", "-a:no", url, "file://con"], stdout=sink, stderr=subprocess.DEVNULL))
            time.sleep(0.05)
        time.sleep(4)
        before = [os.path.getsize(f) for f in files]
        cpu = measure(pid, seconds)
        grown = [os.path.getsize(f) - b for f, b in zip(files, before)]
    finally:
        for p in procs: p.terminate()
        for p in procs: p.wait()
        shutil.rmtree(out, ignore_errors=True)
    served = [g for g in grown if g > 0]
    return cpu, len(served), round(sum(served) / len(served) / seconds) if served else 0

def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary"); p.add_argument("--readers", type=int, default=100); p.add_argument("--seconds", type=float, default=10)
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="readers-cpu")
    conf = os.path.join(d, "c.yaml")
    open(conf, "w").write('server:\n  rtsp: {listen: "127.0.0.1:0"}\ningest:\n  srt: {listen: "127.0.0.1:0"}\n'
                          'streams:\n  cam: {source: "testsrc://?size=640x360&fps=30&gop=30&bitrate=1000", preview: false}\n')
    serve = subprocess.Popen([a.binary, "serve", "--config", conf, "--listen", "127.0.0.1:0", "--state-dir", d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ports = {}
    while len(ports) < 2:
        line = serve.stdout.readline()
        for name, pat in (("rtsp", r"RTSP server listening on rtsp://127.0.0.1:(\d+)"), ("srt", r"SRT ingest listening on srt://127.0.0.1:(\d+)")):
            m = re.search(pat, line)
            if m: ports[name] = int(m.group(1))
    time.sleep(3)
    out = {"readers": a.readers, "seconds": a.seconds, "idle": measure(serve.pid, a.seconds)}
    out["srt"], out["srt_served"], out["srt_bytes_per_second"] = srt_phase(serve.pid, f"srt://127.0.0.1:{ports['srt']}?streamid=read:cam", a.readers, a.seconds)
    time.sleep(3)
    async def rtsp_phase():
        stop = asyncio.Event()
        tasks = [asyncio.create_task(rtsp_reader(ports["rtsp"], stop)) for _ in range(a.readers)]
        await asyncio.sleep(4)
        out["rtsp"] = await asyncio.to_thread(measure, serve.pid, a.seconds)
        stop.set()
        for t in tasks: t.cancel()
    asyncio.run(rtsp_phase())
    # The peer: GStreamer's srtsink serving the same stream to as many readers.
    gst_port = free_udp_port()
    gst = subprocess.Popen(["gst-launch-1.0", "-q", "rtspsrc", f"location=rtsp://127.0.0.1:{ports['rtsp']}/cam", "protocols=tcp", "latency=0",
                            "!", "rtph264depay", "!", "h264parse", "!", "mpegtsmux", "alignment=7", "!",
                            "srtsink", f"uri=srt://127.0.0.1:{gst_port}?mode=listener", "wait-for-connection=false", "latency=20"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(4)
    out["gstreamer_idle"] = measure(gst.pid, a.seconds)
    out["gstreamer"], out["gstreamer_served"], out["gstreamer_bytes_per_second"] = srt_phase(gst.pid, f"srt://127.0.0.1:{gst_port}", a.readers, a.seconds)
    gst_died = gst.poll() is not None
    gst.terminate(); gst.wait()
    serve.terminate(); serve.wait()
    # Per reader served: a reader turned away costs nothing and is not counted.
    per = lambda cpu, idle, n: round((cpu - idle) * 100 / n, 3) if n else None
    out["srt_per_reader_percent"] = per(out["srt"], out["idle"], out["srt_served"])
    out["rtsp_per_reader_percent"] = per(out["rtsp"], out["idle"], a.readers)
    out["gstreamer_srt_per_reader_percent"] = per(out["gstreamer"], out["gstreamer_idle"], out["gstreamer_served"])
    if out["srt_served"] < a.readers:
        out["srt_warning"] = f"serve's SRT port served {out['srt_served']} of {a.readers} readers"
    if out["gstreamer_served"] < a.readers:
        out["gstreamer_warning"] = f"srtsink served {out['gstreamer_served']} of {a.readers} readers"
    if gst_died:
        out["gstreamer_warning"] = "gst-launch-1.0 ended before it was measured"

    print(json.dumps(out))

if __name__ == "__main__":
    main()
