#!/usr/bin/env python3
"""Paired A/B runs of two builds in one namespace, alternating (A B B A A B …), so that a
machine's drift hits both alike. Uses scale.py's namespace and figures.

    python3 Benchmarks/ab.py targets OLD/ReachabilityScale NEW/ReachabilityScale [--rounds 14]
        10,000 address targets, one link change: time to the last callback; and the
        in-process latency (200 link changes), per round.
    python3 Benchmarks/ab.py routes OLD/ReachabilityScale NEW/ReachabilityScale [--rounds 6]
        10,000 address targets, a route covering one of them added and deleted 20 times:
        time to that target's callback (p50 per round).
    python3 Benchmarks/ab.py wifi OLD/ReachabilityScale NEW/ReachabilityScale [--links 8] [--stall 250]
        one target beside LINKS links classified Wi-Fi, each nl80211 request held STALL ms: a
        route covering the target added and deleted 20 times, time to its callback (p50).
        A stall needs both sides built with the fault engine: `swift build -c release
        -Xswiftc -DENABLE_FAULT_INJECTION --product ReachabilityScale`.
    python3 Benchmarks/ab.py startup OLD/reachability NEW/reachability [--rounds 12]
        start-up to the first `watch --json` line with 1,000,000 routes, 9 starts per round:
        the rounds' medians and RSS.

Build the old side from a worktree of the commit to compare (`git worktree add /tmp/old REV`,
then the same `swift build -c release …` there). Needs root, iproute2 and util-linux.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=["targets", "routes", "wifi", "startup"])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--links", type=int, default=8, help="wifi: links classified Wi-Fi")
    parser.add_argument("--stall", type=int, default=0, help="wifi: ms each nl80211 request is held")
    args = parser.parse_args()
    sides = {"old": args.old, "new": args.new}
    results = {"old": [], "new": []}
    ns = scale.Namespace()
    try:
        if args.figure == "startup":
            ns.batch(scale.bulk_routes(0, 1000))
            for start in range(1000, 1_000_000, 100_000):
                ns.batch(scale.bulk_routes(start, min(100_000, 1_000_000 - start)))
        for round_ in range(args.rounds):
            order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
            for name in order:
                if args.figure == "targets":
                    targets = scale.run_scale(ns, sides[name], "targets", 10_000)
                    if targets["unreachableAfter"] != 10_000:
                        raise SystemExit(f"{name}: not every target became unreachable")
                    latency = scale.run_scale(ns, sides[name], "latency", 200)
                    results[name].append((targets["changeToLastCallbackMillis"], latency["p50Micros"],
                                          latency["p99Micros"]))
                elif args.figure == "wifi":
                    wifi = scale.run_scale(ns, sides[name], "wifi", args.links, args.stall)
                    results[name].append((wifi["p50Millis"], wifi["p90Millis"]))
                elif args.figure == "routes":
                    routes = scale.run_scale(ns, sides[name], "routes", 10_000)
                    if routes["callbacks"] != 10_000 + 40:
                        raise SystemExit(f"{name}: {routes['callbacks']} callbacks, not 10,040")
                    results[name].append((routes["p50Millis"], routes["p90Millis"]))
                else:
                    startup = scale.figure_startup(ns, sides[name], 1_000_000, 9)
                    results[name].append((startup["medianMillis"], startup["rssKiB"]))
    finally:
        ns.close()
    for name, rows in results.items():
        if args.figure == "targets":
            print(f"{name}: 10,000 targets median {statistics.median(r[0] for r in rows):.1f} ms "
                  f"{[round(r[0], 1) for r in rows]}; latency p50 {statistics.median(r[1] for r in rows):.0f} µs, "
                  f"p99 {statistics.median(r[2] for r in rows):.0f} µs")
        elif args.figure == "routes":
            print(f"{name}: a route covering 1 of 10,000 targets, p50 {statistics.median(r[0] for r in rows):.2f} ms "
                  f"{[round(r[0], 2) for r in rows]}; p90 {statistics.median(r[1] for r in rows):.2f} ms")
        elif args.figure == "wifi":
            print(f"{name}: a route change beside {args.links} Wi-Fi links, nl80211 held {args.stall} ms: "
                  f"p50 {statistics.median(r[0] for r in rows):.2f} ms {[round(r[0], 2) for r in rows]}; "
                  f"p90 {statistics.median(r[1] for r in rows):.2f} ms")
        else:
            print(f"{name}: start-up median {statistics.median(r[0] for r in rows):.1f} ms "
                  f"{[round(r[0], 1) for r in rows]}; RSS median {statistics.median(r[1] for r in rows):.0f} KiB")


if __name__ == "__main__":
    main()
