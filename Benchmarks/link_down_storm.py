#!/usr/bin/env python3
"""A link carrying many routes goes down: from the change's write to the first line.

    unshare -rn python3 Benchmarks/link_down_storm.py [--routes 5000] [--cycles 7] [--rounds 2] BINARY...

The namespace of Benchmarks/pass_latency.py (`setup_namespace`: vA with 192.0.2.1/24 and
2001:db8:200::1/64, default routes via its veth peer vB in a second namespace), plus
ROUTES IPv6 /64 routes via vA's gateway. `BINARY watch --json` runs there; one long-lived
`ip -batch` sets vA down CYCLES times (each time bringing it back up with its default
routes and the ROUTES routes, and waiting until they are all in the table), and the time
from the write of `link set vA down` to the first line after it is taken. The kernel
sends the link's RTM_NEWLINK first and then a RTM_DELROUTE for each of the routes (the
IPv4 ones go without a message): a monitor that handles every queued message before it
evaluates reports the link's loss only after thousands of deletions. The binaries run in
turn, round after round. Any program that prints a line at start and one per change can
stand in for a binary (Benchmarks/limit_monitor.c ignores its arguments).
Needs root (or `unshare -rn`), iproute2 and util-linux. Traffic: none leaves the namespaces.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pass_latency  # noqa: E402


def routes_over_vA():
    out = subprocess.run(["ip", "-6", "route", "show", "dev", "vA"], capture_output=True, text=True).stdout
    return out.count("via 2001:db8:200::2")


def wait_for_routes(count, timeout=60):
    deadline = time.monotonic() + timeout
    while routes_over_vA() < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {routes_over_vA()} of {count} routes over vA")
        time.sleep(0.05)


def inside(count, cycles, binary):
    peer = pass_latency.setup_namespace()
    routes = "".join(f"route add 2001:db8:{0x1000 + i // 256:x}:{i % 256:x}::/64 via 2001:db8:200::2 dev vA\n"
                     for i in range(count))
    batch = subprocess.Popen(["ip", "-force", "-batch", "-"], stdin=subprocess.PIPE, text=True)
    batch.stdin.write(routes)
    batch.stdin.flush()
    wait_for_routes(count + 1)  # and ::/0
    watch = subprocess.Popen([binary, "watch", "--json"], stdout=subprocess.PIPE, bufsize=0)
    watch.stdout.readline()
    lines = pass_latency.line_stamps(watch.stdout)
    latency = []
    for _ in range(cycles):
        time.sleep(0.2)
        while not lines.empty():
            lines.get()
        start = time.monotonic_ns()
        batch.stdin.write("link set vA down\n")
        batch.stdin.flush()
        latency.append((lines.get(timeout=30) - start) / 1000)
        deadline = time.monotonic() + 60
        while routes_over_vA() > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        batch.stdin.write("link set vA up\nroute add default via 192.0.2.2 dev vA\n"
                          "route add ::/0 via 2001:db8:200::2 dev vA\n" + routes)
        batch.stdin.flush()
        wait_for_routes(count + 1)
    watch.terminate()
    watch.wait()
    batch.stdin.close()
    batch.wait()
    peer.kill()
    print(f"  {binary}: link down → first line p50 {statistics.median(latency):.0f} µs; "
          f"all {', '.join(str(round(x)) for x in sorted(latency))}", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        inside(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", type=int, default=5000)
    parser.add_argument("--cycles", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    pass_latency.in_rounds(__file__, args.rounds, args.binaries, [str(args.routes), str(args.cycles)])


if __name__ == "__main__":
    main()
