#!/usr/bin/env python3
"""System-level figures of DESIGN §8 for `reachability`, each in a network
namespace this script makes (and removes): idle CPU and wake-ups, start-up and
RSS with big route tables, CPU for a route storm against `ip monitor`'s in the
same run (final state checked), 10,000 targets after one link change, and kernel
event -> callback latency in-process. The latency against the peers (ip monitor,
GLib) is ../shared/peers/latency.py's: see BENCHMARKS.md.

    python3 Benchmarks/scale.py [--smoke] [--json FILE]

It builds nothing: run `swift build -c release --product reachability` at the
root and `swift build -c release --product ReachabilityScale` in Benchmarks/ (a
package of its own) first; the script says so if a binary is missing.
--smoke runs every figure small (seconds, not minutes) so CI keeps them working;
its numbers are not the budgets' figures. Needs root, iproute2 and util-linux.
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def sh(*argv, stdin=None):
    return subprocess.run(argv, input=stdin, check=True, capture_output=True, text=True).stdout


class Namespace:
    """`ip netns add`, with veth0 (10.0.0.1/8, default via 10.0.0.2) whose peer veth1 is
    up in a second namespace, `peer_path` (as the far end of a cable: changing it shows
    here only as veth0's carrier), and vC/vD for bulk routes (which link flaps on veth0
    never flush)."""

    def __init__(self):
        self.name = f"rbench-{os.getpid()}"
        self.path = f"/run/netns/{self.name}"
        self.peer_path = f"/run/netns/{self.name}-peer"
        sh("ip", "netns", "add", self.name)
        sh("ip", "netns", "add", self.name + "-peer")
        sh("ip", "-n", self.name + "-peer", "link", "set", "lo", "up")
        self.batch([
            "link set lo up",
            # Distinct indexes: the kernel reports a carrier change at once only for a
            # link whose index differs from its peer's (linkwatch's "urgent" test);
            # otherwise it batches the event for up to a second.
            f"link add veth0 index 10 type veth peer name veth1 index 11 netns {self.peer_path}",
            "link set veth0 up",
            "addr add 10.0.0.1/8 dev veth0", "route add default via 10.0.0.2 dev veth0",
            "link add vC type veth peer name vD", "link set vD up", "link set vC up",
        ])
        sh("ip", "-n", self.name + "-peer", "link", "set", "veth1", "up")
        sh("ip", "netns", "exec", self.name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")

    def batch(self, lines):
        sh("ip", "-n", self.name, "-force", "-batch", "-", stdin="\n".join(lines) + "\n")

    def spawn(self, argv, **kwargs):
        return subprocess.Popen(["nsenter", f"--net={self.path}", "--"] + argv, **kwargs)

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name + "-peer"], capture_output=True)


def bulk_routes(start, count, verb="add"):
    """/32 routes in 100.64.0.0/10 on vC, numbered from `start`."""
    out = []
    for i in range(start, start + count):
        out.append(f"route {verb} 100.{64 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}/32 dev vC")
    return out


def cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK


def context_switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in open(f"/proc/{pid}/task/{task}/status"):
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def rss_kib(pid, key="VmRSS"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def readline(process, timeout):
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else None


def start_watch(ns, binary):
    """Starts `reachability watch --json` in `ns`; returns (process, seconds to first line)."""
    started = time.monotonic()
    process = ns.spawn([binary, "watch", "--json"], stdout=subprocess.PIPE, text=True, bufsize=1)
    line = readline(process, 30)
    if not line:
        raise SystemExit("reachability watch printed nothing")
    return process, time.monotonic() - started, json.loads(line)


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()


def figure_idle(ns, binary, seconds):
    process, _, _ = start_watch(ns, binary)
    time.sleep(5)  # Let start-up finish (and idle Dispatch workers retire).
    cpu, switches = cpu_ms(process.pid), context_switches(process.pid)
    time.sleep(seconds)
    result = {"seconds": seconds, "cpuMillis": cpu_ms(process.pid) - cpu,
              "wakeups": context_switches(process.pid) - switches}
    stop(process)
    return result


def figure_startup(ns, binary, routes, runs):
    times, rss = [], []
    for _ in range(runs):
        process, seconds, _ = start_watch(ns, binary)
        times.append(seconds * 1000)
        rss.append(rss_kib(process.pid))
        stop(process)
    return {"routes": routes, "runs": runs, "medianMillis": statistics.median(times),
            "minMillis": min(times), "rssKiB": statistics.median(rss)}


def figure_storm(ns, binary, events):
    """`events` route adds and deletes (half each) on vC with `reachability watch` and
    `ip monitor route` both running; CPU of each once both are quiet."""
    watch, _, first = start_watch(ns, binary)
    monitor = ns.spawn(["ip", "monitor", "route"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    cpu = {"reachability": cpu_ms(watch.pid), "ip-monitor": cpu_ms(monitor.pid)}
    half = events // 2
    ns.batch(bulk_routes(0, half) + bulk_routes(0, half, "del"))
    # Quiet: neither used CPU for a whole second.
    last = None
    while True:
        time.sleep(1)
        now = (cpu_ms(watch.pid), cpu_ms(monitor.pid))
        if now == last:
            break
        last = now
    used = {"reachability": now[0] - cpu["reachability"], "ip-monitor": now[1] - cpu["ip-monitor"]}
    # Final state: nothing changed for the Internet, so no line; the state must
    # still be the first one, and a fresh `status` must agree.
    extra = readline(watch, 0.2)
    status = json.loads(sh("nsenter", f"--net={ns.path}", "--", binary, "status", "--json"))
    stop(watch)
    monitor.kill()
    return {"events": 2 * half, "cpuMillis": used,
            "finalStateRight": extra is None and status["status"] == first["status"] == "reachableViaWiFi"}


def run_scale(ns, scale_binary, figure, count, *extra):
    out = sh(scale_binary, figure, ns.path, str(count), ns.peer_path, *map(str, extra))
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="every figure, small (CI)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--build", default=os.path.join(ROOT, ".build", "release"),
                        help="the root package's build folder (the reachability CLI)")
    parser.add_argument("--benchmarks-build", default=os.path.join(ROOT, "Benchmarks", ".build", "release"),
                        help="the Benchmarks package's build folder (ReachabilityScale)")
    args = parser.parse_args()
    binary = os.path.join(args.build, "reachability")
    scale = os.path.join(args.benchmarks_build, "ReachabilityScale")
    for path, build in ((binary, "swift build -c release --product reachability"),
                        (scale, "cd Benchmarks && swift build -c release --product ReachabilityScale")):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} is missing: {build}")
    small = args.smoke
    figures = {"smoke": small}
    ns = Namespace()
    try:
        figures["idle"] = figure_idle(ns, binary, 2 if small else 60)
        print("idle", figures["idle"], flush=True)
        ns.batch(bulk_routes(0, 1000))
        figures["startupSmallTable"] = figure_startup(ns, binary, 1000, 3 if small else 9)
        print("startup", figures["startupSmallTable"], flush=True)
        big = 20_000 if small else 1_000_000
        for start in range(1000, big, 100_000):
            ns.batch(bulk_routes(start, min(100_000, big - start)))
        figures["startupBigTable"] = figure_startup(ns, binary, big, 3 if small else 9)
        print("startup", figures["startupBigTable"], flush=True)
        ns.batch(["route flush dev vC"])
        figures["storm"] = figure_storm(ns, binary, 2000 if small else 100_000)
        print("storm", figures["storm"], flush=True)
        figures["targets"] = run_scale(ns, scale, "targets", 500 if small else 10_000)
        print("targets", figures["targets"], flush=True)
        figures["latency"] = run_scale(ns, scale, "latency", 20 if small else 200)
        print("latency", figures["latency"], flush=True)
    finally:
        ns.close()
    failures = []
    if not figures["storm"]["finalStateRight"]:
        failures.append("storm: wrong final state")
    if figures["targets"]["unreachableAfter"] != figures["targets"]["count"]:
        failures.append("targets: not every target became unreachable")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    if failures:
        raise SystemExit("; ".join(failures))


if __name__ == "__main__":
    main()
