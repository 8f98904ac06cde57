#!/usr/bin/env python3
"""The cost of a scrape of `reachability exporter` with many targets (issue 17:
"adds no work per scrape"), in a network namespace this script makes and removes.

    python3 Benchmarks/exporter_scrape.py [--targets 1000] [--scrapes 1000] [--smoke]

It starts the release exporter with N address targets (all routed over one veth
with a default route), waits until every target's series is there, then:
- scrapes /metrics N times over one keep-alive connection and N times with a new
  connection each: latency p50/p99/max, and the exporter's CPU per scrape (utime +
  stime from /proc, before and after);
- reads the monitor's evaluation-pass and event counters before and after the
  scrapes (they must not move: a scrape does no netlink work);
- flaps the link while a client scrapes as fast as it can, and reports the same
  latency figures under change (scrapes never wait for an evaluation).
Build first: `swift build -c release --product reachability --static-swift-stdlib`.
Needs root and iproute2.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def value(text, series):
    match = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(latencies):
    ms = [x * 1000 for x in latencies]
    return {"p50_ms": round(percentile(ms, 50), 3), "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(max(ms), 3)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--scrapes", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.targets, args.scrapes = 50, 20
    binary = os.path.join(ROOT, ".build/release/reachability")
    if not os.path.exists(binary):
        sys.exit("build it first: swift build -c release --product reachability --static-swift-stdlib")
    ns = f"rbench-scrape-{os.getpid()}"
    sh("ip", "netns", "add", ns)
    exporter = None
    try:
        def ip(*a):
            sh("ip", "-n", ns, *a)
        ip("link", "set", "lo", "up")
        # No IPv6: no link-local address whose DAD would end (an event) during the scrapes.
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        ip("link", "set", "veth1", "up")
        ip("link", "set", "veth0", "up")
        ip("addr", "add", "10.0.0.1/8", "dev", "veth0")
        ip("route", "add", "default", "via", "10.0.0.2", "dev", "veth0")
        targets = [f"203.0.{i // 250}.{i % 250 + 1}" for i in range(args.targets)]
        exporter = subprocess.Popen(
            ["ip", "netns", "exec", ns, binary, "exporter", "--listen", "127.0.0.1:0"] + targets,
            stderr=subprocess.PIPE, text=True)
        line = exporter.stderr.readline()
        port = int(re.search(r":(\d+)/metrics", line).group(1))
        # `ip netns exec` execs the binary: the same PID.
        pid = exporter.pid
        # The client runs inside the namespace too: a small Python helper there.
        client = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, str(port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def ask(command):
            client.stdin.write(json.dumps(command) + "\n")
            client.stdin.flush()
            return json.loads(client.stdout.readline())

        deadline = time.time() + 120
        while True:
            text = ask({"op": "get"})["body"]
            ready = sum(1 for t in targets if value(text, f'reachability_reachable{{target="{t}"}}') == 1)
            if ready == len(targets):
                break
            if time.time() > deadline:
                sys.exit(f"only {ready} of {len(targets)} targets reported")
            time.sleep(0.2)
        body_bytes = len(text.encode())
        passes_before = value(text, "reachability_monitor_evaluation_passes_total")
        events_before = value(text, "reachability_monitor_events_total")

        results = {"targets": args.targets, "scrapes": args.scrapes, "body_bytes": body_bytes}
        for mode in ["keepalive", "new_connection"]:
            before = cpu_ms(pid)
            answer = ask({"op": "scrape", "n": args.scrapes, "keepalive": mode == "keepalive"})
            after = cpu_ms(pid)
            results[mode] = summary(answer["latencies"])
            results[mode]["exporter_cpu_ms_per_scrape"] = round((after - before) / args.scrapes, 3)
        text = ask({"op": "get"})["body"]
        results["evaluation_passes_during_scrapes"] = value(
            text, "reachability_monitor_evaluation_passes_total") - passes_before
        results["events_during_scrapes"] = value(text, "reachability_monitor_events_total") - events_before

        # Scrapes while the link flaps: they never wait for the evaluations.
        stop = threading.Event()

        def flap():
            while not stop.is_set():
                ip("link", "set", "veth1", "down")
                time.sleep(0.05)
                ip("link", "set", "veth1", "up")
                time.sleep(0.05)
        flapper = threading.Thread(target=flap)
        flapper.start()
        answer = ask({"op": "scrape", "n": args.scrapes, "keepalive": True})
        stop.set()
        flapper.join()
        text = ask({"op": "get"})["body"]
        results["under_flapping"] = summary(answer["latencies"])
        results["under_flapping"]["evaluation_passes"] = value(
            text, "reachability_monitor_evaluation_passes_total") - passes_before
        results["exporter_peak_rss_kib"] = rss_kib(pid)
        client.stdin.close()
        client.wait()
        print(json.dumps(results, indent=1))
        if results["evaluation_passes_during_scrapes"] or results["events_during_scrapes"]:
            sys.exit("scrapes went with evaluation passes or netlink events: a scrape must do no netlink work")
    finally:
        if exporter:
            exporter.terminate()
            exporter.wait()
        sh("ip", "netns", "del", ns, check=False)


CLIENT = r'''
import http.client, json, sys, time
port = int(sys.argv[1])
keep = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
for line in sys.stdin:
    command = json.loads(line)
    if command["op"] == "get":
        keep.request("GET", "/metrics")
        body = keep.getresponse().read().decode()
        print(json.dumps({"body": body}), flush=True)
    else:
        latencies = []
        for _ in range(command["n"]):
            start = time.perf_counter()
            if command["keepalive"]:
                keep.request("GET", "/metrics")
                keep.getresponse().read()
            else:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/metrics")
                c.getresponse().read()
                c.close()
            latencies.append(time.perf_counter() - start)
        print(json.dumps({"latencies": latencies}), flush=True)
'''

if __name__ == "__main__":
    main()
