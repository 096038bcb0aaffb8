#!/usr/bin/python3
"""A hostile SRT caller against LiveRelay's one SRT port, mutated from a seed.

Each exchange is one SRT connection made by ffmpeg's libsrt caller that sends raw bytes
(`-f data`, no remuxing): a stream ID (SRT's `#!::r=…,m=…`, MediaMTX's `publish:…`, plain names,
user and password forms, at their extremes) and a second of MPEG-TS (a real H.264 + AAC capture)
with packets broken from random.Random(f"{seed}:{n}"): sync bytes, PIDs, continuity counters,
adaptation field and PES lengths, PAT/PMT sections, or plain noise.

With --read-stream, about a quarter of the exchanges are readers of that stream instead: one
that reads a second and leaves, one that stops reading (its output piped to nobody, so libsrt's
buffers fill) for two seconds, one that leaves during the handshake, one under a mangled ID.
One line per exchange says what it did, so a crash replays:

    srt_caller.py --port P --stream cam --read-stream good --seed 7 --exchanges 1000
"""
import argparse, os, random, subprocess, tempfile, time, urllib.parse

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--stream", default="cam")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mutate", type=float, default=0.02, help="chance per TS packet")
    p.add_argument("--exchanges", type=int, default=100)
    p.add_argument("--read-stream", default=None, help="a live stream to read in some exchanges")
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="hostile-srt")
    ts = os.path.join(d, "a.ts")
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=15", "-f", "lavfi", "-i", "sine=r=48000",
                    "-t", "1", "-c:v", "libx264", "-g", "15", "-c:a", "aac", "-f", "mpegts", ts], check=True)
    clean = open(ts, "rb").read()
    packets = [bytearray(clean[i:i+188]) for i in range(0, len(clean) - 187, 188)]
    extremes = ["", "x" * 600, "\xff\xfe", "#!::", "#!::r=", "#!::r=" + a.stream + ",m=request", "#!::m=publish,r=",
                "#!::r=" + a.stream + ",m=publish,u=" + "u" * 300 + ",s=x", "publish:", "publish:" + a.stream + ":u:p", "read:" + a.stream,
                "#!::r=" + a.stream + ",m=publish,m=publish,r=other", "=,=,=", "#!::" + ",".join(["k=v"] * 200), "%00", "../" + a.stream]
    out = os.path.join(d, "m.ts")
    for n in range(1, a.exchanges + 1):
        r = random.Random(f"{a.seed}:{n}")
        if a.read_stream and r.random() < 0.25:
            print(f"exchange {n} seed {a.seed}: " + read(a, r, extremes), flush=True)
            continue
        what = []
        sid = r.choice([a.stream, "#!::r=" + a.stream + ",m=publish", "publish:" + a.stream]) if r.random() < 0.6 else r.choice(extremes)
        if sid not in (a.stream, "#!::r=" + a.stream + ",m=publish", "publish:" + a.stream): what.append(f"streamid={sid[:40]!r}")
        body = bytearray()
        for pk in packets:
            pk = bytearray(pk)
            if r.random() < a.mutate:
                k = r.randrange(8)
                if k == 0: pk[0] = r.randrange(256); what.append("sync")
                elif k == 1: pk[1] = r.randrange(256); pk[2] = r.randrange(256); what.append("pid")
                elif k == 2: pk[3] = (pk[3] & 0xF0) | r.randrange(16); what.append("continuity")
                elif k == 3: pk[3] = (pk[3] & 0xCF) | 0x30; pk[4] = r.choice([0, 183, 184, 255]); what.append("adaptation length")
                elif k == 4 and len(pk) > 10: pk[8:10] = r.choice([b"\x00\x00", b"\xff\xff", b"\x7f\xff"]); what.append("pes length")
                elif k == 5: pk[4:] = os.urandom(184); what.append("noise")
                elif k == 6: pk = pk[:r.randrange(188)]; what.append("short packet")
                else: pk[1] = 0x40; pk[2] = 0x00; pk[5:] = os.urandom(183); what.append("PAT noise")
            body += pk
        if r.random() < 0.05: body = bytearray(os.urandom(r.randrange(1, 20000))); what.append("all noise")
        open(out, "wb").write(bytes(body))
        url = f"srt://127.0.0.1:{a.port}?connect_timeout=2000&pkt_size=1316&streamid=" + urllib.parse.quote(sid, safe="")
        try:
            res = subprocess.run(["ffmpeg", "-v", "error", "-re", "-f", "data", "-i", out, "-map", "0", "-c", "copy", "-f", "data", url],
                                 capture_output=True, timeout=10)
            if res.returncode != 0: what.append("refused or cut")
        except subprocess.TimeoutExpired:
            what.append("ffmpeg timed out")
        print(f"exchange {n} seed {a.seed}: " + ("; ".join(sorted(set(what))) or "plain"), flush=True)
    print(f"done: {a.exchanges} exchanges", flush=True)

def read(a, r, extremes):
    """One reader exchange; what it did."""
    kind = r.choice(["read", "stall", "leave", "mangled"])
    sid = "read:" + a.read_stream if kind != "mangled" else r.choice(["read:" + x for x in extremes] + ["#!::r=" + a.read_stream + ",m=request," + r.choice(extremes)])
    url = f"srt://127.0.0.1:{a.port}?connect_timeout=2000&streamid=" + urllib.parse.quote(sid, safe="")
    cmd = ["ffmpeg", "-v", "error", "-probesize", "100000", "-i", url, "-c", "copy", "-f", "mpegts", "pipe:1"]
    if kind == "read":
        try:
            subprocess.run(cmd[:-1] + ["-t", "1", "-"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        except subprocess.TimeoutExpired:
            return "reader timed out"
        return "reader for a second"
    if kind == "stall":
        # Its stdout is a pipe nobody reads: once 64 KiB wait there, ffmpeg stops taking from SRT.
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        time.sleep(2)
        p.kill(); p.wait()
        return "reader that stopped reading"
    if kind == "leave":
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(r.choice([0.01, 0.05, 0.2]))
        p.kill(); p.wait()
        return "reader that left at once"
    try:
        subprocess.run(cmd[:-1] + ["-t", "1", "-"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return f"reader streamid={sid[:40]!r}"

if __name__ == "__main__":
    main()
