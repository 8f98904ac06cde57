#!/usr/bin/env python3
"""Many network namespaces at once (issue 47): what `--all-namespaces` costs and how fast
a change in one of them is seen.

    sudo python3 Benchmarks/namespaces.py [--namespaces 1000] [--changes 200] [--settle 90] [--peers] BIN

BIN is the release `reachability` (reachability-full beside it). Everything runs in a
private mount namespace with a tmpfs on /run/netns, where N named namespaces b1…bN are
made, each with a veth pair (v0 192.0.2.1/24, v1 up, no address) and a default route via
192.0.2.2; they go when the script ends. Phases:

1. `status --all-namespaces`: wall time to its table, its rows, its peak RSS.
2. `watch --all-namespaces --json`: time to the first complete table (a target line for
   every namespace), then RSS, threads and descriptors; CPU over 10 idle seconds, SETTLE
   (90) seconds after the table: the kernel expires the IPv6 neighbour entries of a new
   namespace's first minute one by one, and each is an event for its monitor (754 in 10 s
   at 30 s). The same with 1 namespace (b1 only visible) gives the RSS per namespace
   beyond the first.
3. A change in one namespace among N: `watch --all-namespaces --json` and `watch
   --namespace bK --json` run side by side; a long-lived `ip -n bK -batch -` sets v1
   down, then up (v0's carrier: @internet unreachable, then reachable), CHANGES times,
   20 ms apart. Latency = the read(2) that brought bK's line with the right state minus
   the write of the change (p50, p99, per watcher), and each watcher's CPU meanwhile.
4. With --peers: `ip -all netns exec ip monitor` (its processes and their RSS after 5 s),
   and N `watch --namespace bK` processes (summed RSS and PSS, threads).

Needs root, iproute2, util-linux. No packet leaves the namespaces (none is sent at all).
"""
import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time


def sh(text, **kw):
    return subprocess.run(text, shell=True, check=True, **kw)


def make_namespaces(count):
    sh("mkdir -p /run/netns && mount -t tmpfs none /run/netns")
    names = [f"b{i}" for i in range(1, count + 1)]
    subprocess.run(["ip", "-batch", "-"], input="".join(f"netns add {n}\n" for n in names), text=True, check=True)
    setup = ("link set lo up\nlink add v0 type veth peer name v1\nlink set v1 up\nlink set v0 up\n"
             "addr add 192.0.2.1/24 dev v0\nroute add default via 192.0.2.2\n")
    for name in names:
        subprocess.run(["ip", "-n", name, "-batch", "-"], input=setup, text=True, check=True)
    return names


def status_of(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def kib(value):
    return int(value.split()[0])


def cpu_ms(pid):
    """CPU time of every thread of `pid` so far, in ms (schedstat: nanoseconds, not ticks)."""
    return sum(thread_cpu_ms(pid).values())


def thread_cpu_ms(pid):
    """CPU time of each thread of `pid` so far, in ms, by thread id and name."""
    times = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                times[f"{task} {name}"] = int(f.read().split()[0]) / 1e6
        except OSError:
            pass  # a thread that ended meanwhile
    return times


def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


class Lines:
    """A child's stdout, each line stamped when the read(2) that brought it returned."""

    def __init__(self, command):
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        fd = self.process.stdout.fileno()
        pending = b""
        while True:
            chunk = os.read(fd, 1 << 16)
            stamp = time.monotonic_ns()
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self.queue.put((stamp, line))

    def next(self, timeout):
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self):
        self.process.terminate()
        self.process.wait()


def watch_table(binary, count, idle, settle=1):
    started = time.monotonic_ns()
    watch = Lines([binary, "watch", "--all-namespaces", "--json"])
    seen = set()
    while len(seen) < count + 1:
        got = watch.next(120)
        if got is None:
            raise SystemExit(f"watch --all-namespaces: {len(seen)} of {count + 1} namespaces after 120 s")
        line = json.loads(got[1])
        if "target" in line:
            seen.add(line["namespace"]["name"])
    table_ms = (time.monotonic_ns() - started) / 1e6
    time.sleep(settle)
    status = status_of(watch.process.pid)
    before = thread_cpu_ms(watch.process.pid)
    time.sleep(idle)
    after = thread_cpu_ms(watch.process.pid)
    by_thread = {key.split(" ", 1)[1]: 0.0 for key in after}
    for key, value in after.items():
        by_thread[key.split(" ", 1)[1]] += value - before.get(key, 0)
    figures = {"namespaces": len(seen), "first_table_ms": round(table_ms, 1), "rss_kib": kib(status["VmRSS"]),
               "peak_rss_kib": kib(status["VmHWM"]), "threads": int(status["Threads"]),
               "descriptors": len(os.listdir(f"/proc/{watch.process.pid}/fd")),
               "idle_cpu_ms": round(sum(by_thread.values()), 1),
               "idle_cpu_ms_by_thread": {name: round(value, 1) for name, value in by_thread.items()},
               "idle_seconds": idle,
               "settle_seconds": settle}
    watch.stop()
    return figures


def change_latency(binary, names, changes):
    target = names[len(names) // 2]
    watchers = {"all": Lines([binary, "watch", "--all-namespaces", "--json"]),
                "one": Lines([binary, "watch", "--namespace", target, "--json"])}
    # Settle: each has printed its state for the target's namespace.
    for name, watcher in watchers.items():
        while True:
            got = watcher.next(120)
            if got is None:
                raise SystemExit(f"{name}: no line for {target}")
            line = json.loads(got[1])
            if "target" in line and (name == "one" or line["namespace"]["name"] == target):
                break
    time.sleep(2)
    for watcher in watchers.values():
        while watcher.next(0.05):
            pass
    cpu = {name: cpu_ms(w.process.pid) for name, w in watchers.items()}
    batch = subprocess.Popen(["ip", "-n", target, "-batch", "-"], stdin=subprocess.PIPE, text=True)
    latencies = {name: [] for name in watchers}
    for index in range(changes):
        reachable = index % 2 == 1
        written = time.monotonic_ns()
        batch.stdin.write(f"link set v1 {'up' if reachable else 'down'}\n")
        batch.stdin.flush()
        for name, watcher in watchers.items():
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                got = watcher.next(max(0.0, deadline - time.monotonic()))
                if got is None:
                    break
                line = json.loads(got[1])
                if "target" not in line or (name == "all" and line["namespace"]["name"] != target):
                    continue
                if line["reachable"] == reachable:
                    latencies[name].append((got[0] - written) / 1e3)
                    break
        time.sleep(0.02)
    batch.stdin.close()
    batch.wait()
    figures = {"namespace": target, "changes": changes}
    for name, watcher in watchers.items():
        values = sorted(latencies[name])
        figures[name] = {"right": len(values), "p50_us": round(statistics.median(values)),
                         "p99_us": round(values[min(len(values) - 1, int(len(values) * 0.99))]),
                         "cpu_ms": round(cpu_ms(watcher.process.pid) - cpu[name], 1)}
        watcher.stop()
    return figures


def peers(binary, names):
    figures = {}
    monitor = subprocess.Popen(["ip", "-all", "netns", "exec", "ip", "monitor"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(5)
    group = [int(p) for p in subprocess.run(["pgrep", "-g", str(monitor.pid)], capture_output=True,
                                            text=True).stdout.split()]
    figures["ip_all_netns_exec_ip_monitor"] = {
        "processes": len(group), "rss_kib": sum(kib(status_of(p)["VmRSS"]) for p in group),
        "monitor_processes": sum(1 for p in group if open(f"/proc/{p}/comm").read().strip() == "ip")}
    os.killpg(monitor.pid, 15)
    monitor.wait()
    watchers = [subprocess.Popen([binary, "watch", "--namespace", n, "--json"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) for n in names]
    time.sleep(max(10, len(names) / 50))
    alive = [w for w in watchers if w.poll() is None]
    figures["watch_per_namespace"] = {
        "processes": len(alive), "rss_kib": sum(kib(status_of(w.pid)["VmRSS"]) for w in alive),
        "pss_kib": sum(pss_kib(w.pid) for w in alive),
        "threads": sum(int(status_of(w.pid)["Threads"]) for w in alive)}
    for w in watchers:
        w.terminate()
    for w in watchers:
        w.wait()
    return figures


def inside(arguments):
    binary = os.path.abspath(arguments.binary)
    names = make_namespaces(arguments.namespaces)
    result = {"namespaces": len(names)}
    started = time.monotonic_ns()
    status = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "status", "--all-namespaces"],
                            capture_output=True, text=True)
    result["status_all"] = {"wall_ms": round((time.monotonic_ns() - started) / 1e6, 1),
                            "rows": len(status.stdout.splitlines()) - 1, "exit": status.returncode,
                            "peak_rss_kib": int(status.stderr.strip().splitlines()[-1])}
    result["watch_all"] = watch_table(binary, len(names), arguments.idle, arguments.settle)
    result["change"] = change_latency(binary, names, arguments.changes)
    if arguments.peers:
        result.update(peers(binary, names))
    # One namespace only visible: the same watch, for the RSS per namespace beyond it.
    sh("umount -R /run/netns && mkdir -p /run/netns && mount -t tmpfs none /run/netns && touch /run/netns/b1 "
       "&& unshare -n mount --bind /proc/self/ns/net /run/netns/b1")
    one = watch_table(binary, 1, 1)
    result["watch_one"] = one
    extra = result["watch_all"]["namespaces"] - one["namespaces"]
    if extra > 0:
        result["rss_per_namespace_kib"] = round((result["watch_all"]["rss_kib"] - one["rss_kib"]) / extra, 1)
    print(json.dumps(result, indent=2))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--idle", type=float, default=10)
    parser.add_argument("--settle", type=float, default=90)
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.inside:
        inside(arguments)
        return
    command = ["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__),
               "--inside"] + sys.argv[1:]
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()
