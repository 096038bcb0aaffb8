#!/usr/bin/python3
"""Holds each packet of an NFQUEUE for a random delay before accepting it: delay, jitter and
reordering where the kernel has no netem. Used by `liverelay bench latency --impair`.

  nfq_delay.py --queue N --delay-ms 20 --jitter-ms 10 --reorder 0.05
Prints "ready" once bound; runs until SIGTERM.
"""
import argparse, heapq, random, signal, sys, threading, time
from netfilterqueue import NetfilterQueue

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queue", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--jitter-ms", type=float, default=0)
    ap.add_argument("--reorder", type=float, default=0, help="fraction of packets held one extra delay")
    a = ap.parse_args()
    heap, lock, wake = [], threading.Lock(), threading.Condition()
    seq = [0]

    def on_packet(pkt):
        d = a.delay_ms + random.uniform(-a.jitter_ms, a.jitter_ms)
        if a.reorder > 0 and random.random() < a.reorder:
            d += max(a.delay_ms, 5)  # overtaken by the packets behind it
        due = time.monotonic() + max(0.0, d) / 1000
        with wake:
            seq[0] += 1
            heapq.heappush(heap, (due, seq[0], pkt))
            wake.notify()

    def release():
        while True:
            with wake:
                while not heap:
                    wake.wait()
                due, _, pkt = heap[0]
                now = time.monotonic()
                if due > now:
                    wake.wait(due - now)
                    continue
                heapq.heappop(heap)
            pkt.accept()

    threading.Thread(target=release, daemon=True).start()
    q = NetfilterQueue()
    q.bind(a.queue, on_packet, max_len=20000)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    try:
        q.run()
    finally:
        q.unbind()

if __name__ == "__main__":
    main()
