#!/usr/bin/env python3
"""The reader's system calls and wake-ups around each change, from the kernel's tracer.

    sudo python3 Benchmarks/trace_passes.py [--cycles 30] [--show 2] [--other-link] BINARY...

Runs Benchmarks/pass_latency.py (one round, CYCLES cycles of its six changes) for each
binary in turn with ftrace recording every process's system calls and scheduler wake-ups
(tracefs: raw_syscalls:sys_enter/sys_exit, sched:sched_waking, sched:sched_switch; trace
clock mono), then prints per kind the medians, in µs after `ip` read the change, of: `ip`'s
last sendmsg returning (the kernel has sent everything by then), the reader woken, its
poll returning, its first read (how many datagrams, how long), its first lookup `sendto`,
its write, and the write's return; then the same as differences. With --show N, the
timelines of the first N link-downs. The reader is the thread named `reachability-nl`;
a stand-in such as Benchmarks/limit_monitor.c is traced under its own name.

Needs root with tracefs at /sys/kernel/tracing (not a user namespace: the tracer is the
host's), iproute2 and util-linux. The tracer adds about a microsecond to each system call,
so compare builds traced alike. Traffic: none leaves the namespaces.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

TRACING = "/sys/kernel/tracing"
EVENTS = ["sched/sched_switch", "sched/sched_waking", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit"]
LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
NAMES = {0: "read", 1: "write", 7: "poll", 44: "sendto", 46: "sendmsg", 47: "recvmsg", 299: "recvmmsg",
         45: "recvfrom"}
ADD4 = "route add default via 192.0.2.2 dev vA\n"
ADD6 = "route add ::/0 via 2001:db8:200::2 dev vA\n"
STEPS = {  # pass_latency.py's changes, by the bytes `ip -batch` reads for each
    "link_down": "link set vA down\n",
    "link_up": "link set vA up\n" + ADD4 + ADD6,
    "routes": ADD4 + ADD6,  # route_add and route_del have the same length
    "addr_del": "addr del 192.0.2.1/24 dev vA\naddr del 2001:db8:200::1/64 dev vA\n" + ADD6.replace("add", "del"),
    "addr_add": "addr add 192.0.2.1/24 dev vA\naddr add 2001:db8:200::1/64 dev vA nodad\n" + ADD4 + ADD6,
}
BY_SIZE = {len(text): kind for kind, text in STEPS.items()}


def write(name, value):
    with open(os.path.join(TRACING, name), "w") as f:
        f.write(value)


def trace(binary, cycles, other_link):
    write("tracing_on", "0")
    write("trace", "")
    write("trace_clock", "mono")
    write("buffer_size_kb", "32768")
    for event in EVENTS:
        write(f"events/{event}/enable", "1")
    write("tracing_on", "1")
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "pass_latency.py"), "--cycles", str(cycles), "--rounds",
                        "1"] + (["--other-link"] if other_link else []) + [binary], check=True)
    finally:
        write("tracing_on", "0")
        with open(os.path.join(TRACING, "trace")) as f:
            text = f.read()
        for event in EVENTS:
            write(f"events/{event}/enable", "0")
        write("trace", "")
    return text


def analyse(text, subject, show):
    events = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            events.append((match.group(1), int(match.group(3)), float(match.group(4)) * 1e6, match.group(5),
                           match.group(6)))
    starts = [(index, events[index][2], BY_SIZE[int(rest.split("= ")[1])])
              for index, (comm, _, _, kind, rest) in enumerate(events)
              if comm == "ip" and kind == "sys_exit" and rest.startswith("NR 0 = ")
              and int(rest.split("= ")[1]) in BY_SIZE]
    per_kind, shown = {}, 0
    for number, (index, t0, kind) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(events)
        marks, timeline = {}, []
        for comm, cpu, t, event, rest in events[index:end]:
            at = t - t0
            if comm == "ip" and event == "sys_exit" and rest.startswith("NR 46 "):
                marks["ip done"] = at
            if event == "sched_waking" and f"comm={subject} " in rest:
                marks.setdefault("woken", at)
                timeline.append(f"{at:8.1f}  woken (by {comm})")
            if comm != subject or event not in ("sys_enter", "sys_exit"):
                continue
            call = int(rest.split()[1])
            name = NAMES.get(call, f"syscall {call}")
            if event == "sys_exit":
                result = rest.split("= ")[1]
                timeline.append(f"{at:8.1f}  [{cpu}] {name} returned {result}")
                if call == 7:
                    marks.setdefault("poll", at)
                elif call in (299, 45, 47) and "read" not in marks and "poll" in marks:
                    marks["read"] = at
                    marks["datagrams"] = int(result)
                elif call == 1:
                    marks.setdefault("written", at)
            else:
                timeline.append(f"{at:8.1f}  [{cpu}] {name}")
                if call in (299, 45, 47) and "poll" in marks:
                    marks.setdefault("reading", at)
                elif call == 44:
                    marks.setdefault("sendto", at)
                elif call == 1:
                    marks.setdefault("write", at)
        per_kind.setdefault(kind, []).append(marks)
        if kind == "link_down" and shown < show:
            shown += 1
            print(f"  link_down at {t0 / 1e6:.6f} s:")
            print("\n".join(timeline[:40]))
    columns = ["ip done", "woken", "poll", "reading", "read", "sendto", "write", "written"]
    spans = [("woken", "poll"), ("reading", "read"), ("poll", "sendto"), ("sendto", "write"), ("write", "written"),
             ("poll", "written")]
    for kind, rows in per_kind.items():
        def median(key, base=None):
            values = [row[key] - (row[base] if base else 0) for row in rows if key in row and (not base or base in row)]
            return f"{statistics.median(values):6.1f}" if values else "     -"
        counts = [row["datagrams"] for row in rows if "datagrams" in row]
        print(f"  {kind:9} n={len(rows):3} " + " ".join(f"{column} {median(column)}" for column in columns)
              + f" | first read {statistics.median(counts) if counts else '-'} datagrams | "
              + " ".join(f"{a}→{b} {median(b, a)}" for a, b in spans), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--show", type=int, default=0)
    parser.add_argument("--other-link", action="store_true", help="pass_latency.py's --other-link")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    for binary in args.binaries:
        name = os.path.basename(binary)
        subject = name[:15] if name.startswith("limit") else "reachability-nl"
        print(f"{binary}:", flush=True)
        analyse(trace(os.path.abspath(binary), args.cycles, args.other_link), subject, args.show)


if __name__ == "__main__":
    main()
