#!/usr/bin/env python3
"""Runs `reachability watch` under every descriptor limit from 16 to 256 with 0, 70
and 200 names behind a resolver that never answers (issue 27, defect 7), and reports
how each run ended. A run passes when it ran until interrupted (exit 0) or refused
at once with "too few file descriptors" (exit 2); anything else, a signal above
all, fails the sweep (exit status 1).

    Scripts/descriptor-sweep.py [--binary PATH] [--seconds 3] [--parallel 8] [--first 16] [--last 256]

Needs root (a named network namespace, /etc/netns); makes and removes its own.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/reachability")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--first", type=int, default=16)
    parser.add_argument("--last", type=int, default=256)
    options = parser.parse_args()

    name = f"sweep-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    os.makedirs(f"/etc/netns/{name}", exist_ok=True)
    with open(f"/etc/netns/{name}/resolv.conf", "w") as file:
        file.write("nameserver 127.0.0.1\noptions timeout:30 attempts:5\n")
    # The silent server: a bound UDP socket that reads nothing, inside the namespace.
    sink = subprocess.Popen(
        ["ip", "netns", "exec", name, "python3", "-c",
         "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
         "s.bind(('127.0.0.1',53))\nprint('ready',flush=True)\ntime.sleep(36000)"],
        stdout=subprocess.PIPE, text=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    sink.stdout.readline()
    runs = [(limit, names) for limit in range(options.first, options.last + 1) for names in (0, 70, 200)]
    outcomes = {}
    try:
        for start in range(0, len(runs), options.parallel):
            batch = runs[start:start + options.parallel]
            children = []
            for limit, names in batch:
                argv = [options.binary, "watch"] + [f"never{i}.test" for i in range(1, names + 1)] + [
                    "--namespace", name]
                children.append(((limit, names), subprocess.Popen(
                    ["sh", "-c", f'ulimit -n {limit} && exec "$0" "$@"'] + argv,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
            deadline = time.monotonic() + options.seconds
            for run, child in children:
                try:
                    child.wait(timeout=max(0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.send_signal(signal.SIGINT)
                try:
                    stderr = child.communicate(timeout=10)[1]
                except subprocess.TimeoutExpired:
                    child.kill()
                    stderr = child.communicate()[1] + "\n(killed: no exit 10 s after SIGINT)"
                outcomes[run] = (child.returncode, stderr)
    finally:
        sink.kill()
        subprocess.run(["ip", "netns", "del", name])
        subprocess.run(["rm", "-rf", f"/etc/netns/{name}"])

    ran, refused, failed = [], [], []
    for run, (code, stderr) in sorted(outcomes.items()):
        if code == 0:
            ran.append(run)
        elif code == 2 and "too few file descriptors" in stderr:
            refused.append(run)
        else:
            failed.append((run, code, stderr.strip().splitlines()[-1:] if stderr.strip() else []))
    print(f"{len(outcomes)} runs (limits {options.first}-{options.last} x 0/70/200 names, {options.seconds} s each): "
          f"{len(ran)} ran until SIGINT, {len(refused)} refused with exit 2, {len(failed)} failed")
    for names in (0, 70, 200):
        lowest = min((limit for limit, count in ran if count == names), default=None)
        print(f"  {names:3} names: lowest limit that runs: {lowest}")
    for (limit, names), code, last in failed:
        print(f"  FAILED limit {limit}, {names} names: exit {code if code >= 0 else 'signal ' + str(-code)} {last}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
