#!/usr/bin/env python3
"""What one evaluation pass of `reachability watch --json` executes, counted by callgrind.

    unshare -rn python3 Benchmarks/callgrind_pass.py BINARY [--changes cycles|down] [--cycles 50]

Sets up the namespace of Benchmarks/pass_latency.py (`setup_namespace`: vA with
192.0.2.1/24 and 2001:db8:200::1/64, default routes via its veth peer vB in a second
namespace), runs
`BINARY watch --json` under `valgrind --tool=callgrind`, waits until it has started, zeroes
the counters, makes the changes, dumps the counters and prints, for the reader thread's
work over those changes: the instructions executed, the evaluation passes
(NetlinkMonitor.reevaluateAll), malloc calls, recvmsg calls, and how many distinct
functions ran (the code a cold pass has to bring into the caches).

  --changes cycles  CYCLES times: the link down, up, and its IPv4 and IPv6 default
                    routes added back (two lines per cycle).
  --changes down    one link-down, after one warm-up cycle (so that the first use of
                    a type's metadata is not counted): the pass the peers harness's
                    link_down measures.

Instruction counts are the same run after run (a figure for BENCHMARKS.md, not a
latency); the wall-clock side is pass_latency.py's. Needs valgrind, iproute2 and
util-linux; a build with symbols (`swift build -c release`, not `make install`'s
stripped copy) makes the dump readable by `callgrind_annotate` too.
Traffic: none leaves the namespaces.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pass_latency import setup_namespace, sh  # noqa: E402


def routes():
    sh("ip route replace default via 192.0.2.2 dev vA; ip route replace ::/0 via 2001:db8:200::2 dev vA")


def cycle():
    sh("ip link set vA down")
    time.sleep(0.05)
    sh("ip link set vA up")
    routes()
    time.sleep(0.05)


def summarize(path):
    """Instructions, passes, malloc and recvmsg calls, distinct functions with cost."""
    names, self_cost, calls = {}, {}, {}
    current = callee = None
    in_call = False
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?", line)
            if m:
                is_call, ident, name = m.groups()
                if name:
                    names[ident] = name
                if is_call:
                    callee = ident
                else:
                    current, in_call = ident, False
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m:
                calls[callee] = calls.get(callee, 0) + int(m.group(1))
                in_call = True
                continue
            m = re.match(r"^(?:[+-]?\d+|\*) (\d+)", line)
            if m and current:
                if in_call:
                    in_call = False  # the inclusive cost of the call just named
                    continue
                self_cost[current] = self_cost.get(current, 0) + int(m.group(1))

    def called(pattern):
        return sum(n for ident, n in calls.items() if re.search(pattern, names.get(ident, "")))

    return {
        "instructions": sum(self_cost.values()),
        # NetlinkMonitor.reevaluateAll(cause:) itself (private: its mangled name carries
        # a discriminator), not the closures specialized inside it.
        "passes": called(r"^\$s16ReachabilityCore14NetlinkMonitorC13reevaluateAll\w*5causeSbAA9PassCauseV_tF$"),
        "malloc": called(r"^malloc$"),
        "recvmsg": called(r"^recvmsg$"),
        "functions": sum(1 for cost in self_cost.values() if cost > 0),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--changes", choices=["cycles", "down"], default="cycles")
    parser.add_argument("--cycles", type=int, default=50)
    args = parser.parse_args()
    peer = setup_namespace()
    time.sleep(0.3)
    work = tempfile.mkdtemp(prefix="callgrind-pass.")
    out = os.path.join(work, "callgrind.out")
    watch = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", os.path.abspath(args.binary), "watch",
         "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=work)
    try:
        first = watch.stdout.readline()
        if not first:
            sys.exit("callgrind_pass: the watch printed nothing")
        time.sleep(2)  # the reader is waiting in poll(2): everything after this is a change's
        if args.changes == "down":
            cycle()
            time.sleep(0.5)
        sh(f"callgrind_control -z {watch.pid} >/dev/null 2>&1")
        if args.changes == "down":
            sh("ip link set vA down")
            time.sleep(0.3)
        else:
            for _ in range(args.cycles):
                cycle()
            time.sleep(0.5)
        sh(f"callgrind_control -d {watch.pid} >/dev/null 2>&1")
    finally:
        watch.terminate()
        watch.wait()
        peer.kill()
    dumps = sorted(p for p in os.listdir(work) if p.startswith("callgrind.out."))
    if not dumps:
        sys.exit("callgrind_pass: no dump")
    figures = summarize(os.path.join(work, dumps[0]))
    print(f"{args.binary}: changes {args.changes}" + (f" x{args.cycles}" if args.changes == "cycles" else ""))
    print("  instructions {instructions:,}, passes {passes}, malloc {malloc}, recvmsg {recvmsg}, "
          "functions run {functions}".format(**figures))
    if figures["passes"]:
        print(f"  per pass: instructions {figures['instructions'] / figures['passes']:,.0f}, "
              f"malloc {figures['malloc'] / figures['passes']:.1f}")
    print(f"  dump: {os.path.join(work, dumps[0])}")


if __name__ == "__main__":
    main()
