"""What every hostile peer shares: its command line and the loop of numbered exchanges, each
one printed as it ends (`exchange N seed S: what was sent`), so a crash replays by seed."""
import argparse, time

def arguments(stream="cam", extra=()):
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--stream", default=stream)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--exchanges", type=int, default=100)
    for name, kw in extra:
        p.add_argument(name, **kw)
    return p.parse_args()

def run(a, exchange):
    """Calls exchange(a, n) for n = 1…; one that cannot connect is said and retried later."""
    for n in range(1, a.exchanges + 1):
        try:
            exchange(a, n)
        except OSError as e:
            print(f"exchange {n} seed {a.seed}: could not connect: {e}", flush=True)
            time.sleep(0.2)
    print(f"done: {a.exchanges} exchanges", flush=True)

def say(a, n, what):
    print(f"exchange {n} seed {a.seed}: " + ("; ".join(what) or "plain"), flush=True)
