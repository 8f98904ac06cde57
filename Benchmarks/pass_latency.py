#!/usr/bin/env python3
"""The event path of `reachability watch --json`, one change at a time, for A/B runs.

    sudo python3 Benchmarks/pass_latency.py [--cycles 100] [--rounds 3] [--other-link] OLD/reachability NEW/reachability

Each run is in a namespace of its own (`unshare -n`): vA with 192.0.2.1/24 and
2001:db8:200::1/64, default routes via its veth peer vB in a second namespace (the peers
harness's setup, ../shared/peers/latency.py; with --other-link also its vC, a veth pair up
in the namespace without addresses or routes: a usable link the answers could move to, as
the stale-answer hold weighs it). The binary's `watch --json` runs there; one long-lived
`ip -batch` makes the harness's six changes (link_down, link_up, route_del, route_add,
addr_del, addr_add) CYCLES times, 3 ms apart, and the time from the write of a
change to the first line after it is taken per kind (p50), with the process's CPU. The
binaries run in turn, round after round, so drift hits each alike. A line is stamped when
the read(2) that brought it returns (until 2026-11-26's fix the pipe was read a byte per
system call, which put a 243-byte line about 250 µs later than a 21-byte one). Any program that
prints a line at start and one per change can stand in for a binary: it is run as
`PROGRAM watch --json` (Benchmarks/limit_monitor.c ignores its arguments).

Needs root (or `unshare -rn`), iproute2 and util-linux. Traffic: none leaves the namespaces.
"""
import argparse
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

KINDS = ["link_down", "link_up", "route_del", "route_add", "addr_del", "addr_add"]


def sh(text):
    subprocess.run(text, shell=True, check=True)


def setup_namespace(other_link=False):
    """In the current (new) namespace: vA with 192.0.2.1/24 and 2001:db8:200::1/64 and
    default routes via its veth peer vB, which lives in a second namespace held by the
    returned process (kill it to end that namespace); with `other_link`, also the pair
    vC/vCp up here, as the peers harness has. Benchmarks/callgrind_pass.py uses it too."""
    for key in ("all", "default"):
        with open(f"/proc/sys/net/ipv6/conf/{key}/accept_dad", "w") as f:
            f.write("0")
    with open("/proc/sys/net/ipv6/conf/default/keep_addr_on_down", "w") as f:
        f.write("1")
    peer = subprocess.Popen(["unshare", "-n", "sleep", "1000"])
    time.sleep(0.1)
    sh(f"ip link set lo up; ip link add vA type veth peer name vB; ip link set vB netns {peer.pid}; "
       "ip link set vA up")
    sh(f"nsenter -t {peer.pid} -n sh -c 'ip link set vB up; ip addr add 192.0.2.2/24 dev vB; "
       "ip addr add 2001:db8:200::2/64 dev vB nodad'")
    sh("ip addr add 192.0.2.1/24 dev vA; ip addr add 2001:db8:200::1/64 dev vA nodad")
    sh("ip route add default via 192.0.2.2 dev vA; ip route add ::/0 via 2001:db8:200::2 dev vA")
    if other_link:
        sh("ip link add vC type veth peer name vCp; ip link set vCp up; ip link set vC up")
    return peer


def line_stamps(pipe):
    """A queue that gets, for each line `pipe` brings, the CLOCK_MONOTONIC ns when the
    read(2) that brought it returned (one read per wake-up: iterating the unbuffered pipe
    reads a byte per system call, which made a longer line look later)."""
    lines = queue.Queue()

    def read():
        fd, pending = pipe.fileno(), b""
        while data := os.read(fd, 1 << 16):
            stamp = time.monotonic_ns()
            pending += data
            while b"\n" in pending:
                pending = pending.split(b"\n", 1)[1]
                lines.put(stamp)
    threading.Thread(target=read, daemon=True).start()
    return lines


def inside(cycles, other_link, command):
    """Runs in the new namespace: set up, start `command`, make the changes, report."""
    peer = setup_namespace(other_link)
    time.sleep(0.3)
    watch = subprocess.Popen(command + ["watch", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             bufsize=0)
    watch.stdout.readline()
    lines = line_stamps(watch.stdout)

    def read_errors():
        for line in watch.stderr:
            sys.stdout.write(line.decode(errors="replace"))
            sys.stdout.flush()
    errors = threading.Thread(target=read_errors, daemon=True)
    errors.start()

    batch = subprocess.Popen(["ip", "-force", "-batch", "-"], stdin=subprocess.PIPE, text=True)
    add4 = "route add default via 192.0.2.2 dev vA\n"
    add6 = "route add ::/0 via 2001:db8:200::2 dev vA\n"
    del4, del6 = add4.replace("add", "del"), add6.replace("add", "del")
    steps = {
        "link_down": "link set vA down\n",
        "link_up": "link set vA up\n" + add4 + add6,
        "route_del": del4 + del6,
        "route_add": add4 + add6,
        "addr_del": "addr del 192.0.2.1/24 dev vA\naddr del 2001:db8:200::1/64 dev vA\n" + del6,
        "addr_add": "addr add 192.0.2.1/24 dev vA\naddr add 2001:db8:200::1/64 dev vA nodad\n" + add4 + add6,
    }

    def cpu():
        fields = open(f"/proc/{watch.pid}/stat").read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) * 1000 // tick
    latency = {kind: [] for kind in KINDS}
    missed = extra = 0
    before = cpu()
    for _ in range(cycles):
        for kind in KINDS:
            time.sleep(0.003)
            while not lines.empty():
                lines.get()
                extra += 1
            start = time.monotonic_ns()
            batch.stdin.write(steps[kind])
            batch.stdin.flush()
            try:
                latency[kind].append((lines.get(timeout=0.2) - start) / 1000)
            except queue.Empty:
                missed += 1
    spent = cpu() - before
    batch.stdin.close()
    batch.wait()
    watch.terminate()
    watch.wait()
    peer.kill()
    every = sum(latency.values(), [])
    errors.join(timeout=5)
    print("  p50 µs: " + " ".join(f"{k} {statistics.median(v):.0f}" for k, v in latency.items() if v)
          + f" | all {statistics.median(every):.0f}, p90 {statistics.quantiles(every, n=10)[8]:.0f}"
          + f" | missed {missed}, lines besides the first {extra} | CPU {spent} ms", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        inside(int(sys.argv[2]), sys.argv[3] == "other-link", sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other-link", action="store_true")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    in_rounds(__file__, args.rounds, args.binaries,
              [str(args.cycles), "other-link" if args.other_link else "alone"])


def in_rounds(script, rounds, binaries, arguments):
    """Runs `script --inside ARGUMENTS… BINARY` in a network namespace of its own for each
    binary in turn, round after round."""
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    for round in range(rounds):
        for binary in binaries:
            print(f"round {round + 1}: {binary}", flush=True)
            subprocess.run(unshare + [sys.executable, os.path.abspath(script), "--inside", *arguments,
                                      os.path.abspath(binary)], check=True)


if __name__ == "__main__":
    main()
