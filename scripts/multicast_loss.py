#!/usr/bin/env python3
"""Lost datagrams of LiveRelay's multicast MPEG-TS forwards, N streams at once, on loopback.

  multicast_loss.py LIVERELAY [--streams 8] [--seconds 20] [--size 640x360] [--bitrate 1000]

Makes a network namespace of its own (lo up, 239/8 routed to it), runs `LIVERELAY serve` in it
with N stamped test streams, each forwarded to udp://239.1.1.K:5000 (ttl=1), and joins all N
groups from one receiver in the same namespace for the given seconds (after 3 s of warm-up).
A datagram is 7x188-byte TS packets; a lost one shows as a gap in a PID's continuity counter
(the forward's PCR/PAT/PMT and video packets each count; the counter has 4 bits, so a loss of
exactly 16 packets in a row would not show, which the kernel's drop counters below would). Prints one JSON line: per stream the
datagrams and TS packets received (null packets, which fill each datagram to seven, among them),
the continuity gaps (packets missed), and the receive
buffer's own drops (/proc/net/snmp's UDP RcvbufErrors in the namespace, before and after).
Needs root (ip netns).
"""
import argparse, json, os, select, socket, struct, subprocess, sys, tempfile, time


def snmp_udp(ns):
    out = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], capture_output=True, text=True).stdout
    lines = [l.split() for l in out.splitlines() if l.startswith("Udp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:]))) if len(lines) >= 2 else {}


def receive(streams, seconds):
    """In the namespace: join the groups, count datagrams, packets and continuity gaps."""
    socks = []
    for k in range(streams):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        group = f"239.1.1.{k + 1}"
        s.bind((group, 5000))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("127.0.0.1")))
        s.setblocking(False)
        socks.append(s)
    stats = [{"datagrams": 0, "packets": 0, "null_packets": 0, "gaps": 0, "missed": 0, "bad": 0} for _ in socks]
    cc = [dict() for _ in socks]
    index = {s.fileno(): i for i, s in enumerate(socks)}
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select(socks, [], [], 0.2)
        for s in ready:
            i = index[s.fileno()]
            while True:
                try:
                    d = s.recv(65536)
                except BlockingIOError:
                    break
                st = stats[i]
                st["datagrams"] += 1
                if len(d) % 188:
                    st["bad"] += 1
                    continue
                for o in range(0, len(d), 188):
                    p = d[o:o + 188]
                    if p[0] != 0x47:
                        st["bad"] += 1
                        continue
                    st["packets"] += 1
                    pid = ((p[1] & 0x1F) << 8) | p[2]
                    if pid == 0x1FFF:
                        st["null_packets"] += 1
                    if pid == 0x1FFF or not (p[3] & 0x10):
                        continue  # null packets and adaptation-only packets do not step the counter
                    c = p[3] & 0x0F
                    last = cc[i].get(pid)
                    if last is not None and c != last and c != (last + 1) & 0x0F:
                        st["gaps"] += 1
                        st["missed"] += (c - last - 1) & 0x0F
                    cc[i][pid] = c
    return stats


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--receive":
        print(json.dumps(receive(int(sys.argv[2]), float(sys.argv[3]))))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("liverelay")
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--bitrate", type=int, default=1000)
    a = ap.parse_args()
    ns = f"lrloss{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    for args in (["netns", "add", ns], ["-n", ns, "link", "set", "lo", "up"], ["-n", ns, "route", "add", "239.0.0.0/8", "dev", "lo"]):
        subprocess.run(["ip"] + args, check=True)
    work = tempfile.mkdtemp(prefix="mcloss-")
    serve = None
    try:
        yaml = "streams:\n" + "".join(
            f"  s{k + 1}: {{source: \"testsrc://?size={a.size}&fps=30&gop=30&bitrate={a.bitrate}\", preview: false, "
            f"forward: [\"udp://239.1.1.{k + 1}:5000?ttl=1\"]}}\n" for k in range(a.streams))
        with open(os.path.join(work, "serve.yaml"), "w") as f:
            f.write(yaml)
        log = open(os.path.join(work, "serve.log"), "w")
        serve = subprocess.Popen(["ip", "netns", "exec", ns, a.liverelay, "serve", "--config", os.path.join(work, "serve.yaml"),
                                  "--listen", "127.0.0.1:0", "--state-dir", work], stdout=log, stderr=subprocess.STDOUT)
        time.sleep(3)
        before = snmp_udp(ns)
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__), "--receive", str(a.streams), str(a.seconds)],
                           capture_output=True, text=True, timeout=a.seconds + 60)
        after = snmp_udp(ns)
        stats = json.loads(r.stdout) if r.returncode == 0 else None
        out = {"streams": a.streams, "seconds": a.seconds, "size": a.size, "bitrate_kbps": a.bitrate, "per_stream": stats,
               "datagrams": sum(s["datagrams"] for s in stats) if stats else None,
               "missed_packets": sum(s["missed"] for s in stats) if stats else None,
               "null_share": round(sum(s["null_packets"] for s in stats) / max(1, sum(s["packets"] for s in stats)), 3) if stats else None,
               "rcvbuf_errors": after.get("RcvbufErrors", 0) - before.get("RcvbufErrors", 0),
               "in_errors": after.get("InErrors", 0) - before.get("InErrors", 0)}
        if not stats:
            out["error"] = (r.stderr.strip().splitlines() or ["no answer"])[-1]
        print(json.dumps(out))
    finally:
        if serve:
            serve.terminate()
            try:
                serve.wait(10)
            except subprocess.TimeoutExpired:
                serve.kill()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


if __name__ == "__main__":
    main()
