#!/usr/bin/env python3
"""What one evaluation pass of `reachability watch --json` executes, counted by callgrind.

    unshare -rn python3 Benchmarks/callgrind_pass.py BINARY [--changes cycles|down|kinds] [--cycles 50]
        [--order FILE]

Sets up the namespace of Benchmarks/pass_latency.py (`setup_namespace`: vA with
192.0.2.1/24 and 2001:db8:200::1/64, default routes via its veth peer vB in a second
namespace), runs
`BINARY watch --json` under `valgrind --tool=callgrind`, waits until it has started, zeroes
the counters, makes the changes, dumps the counters and prints, for the reader thread's
work over those changes: the instructions executed, the evaluation passes (each pass that
asks the kernel writes its lookups once: mnl_socket_sendto), malloc calls, netlink reads (recvmsg, or recvmmsg through
syscall(2) since the reads are batched), how many distinct
functions ran, and on how many 64-byte lines and 4 KiB pages their code lies (what a cold
pass has to bring back into the caches and the TLB).

  --changes cycles  CYCLES times: the link down, up, and its IPv4 and IPv6 default
                    routes added back (two lines per cycle).
  --changes down    one link-down, after one warm-up cycle (so that the first use of
                    a type's metadata is not counted): the pass the peers harness's
                    link_down measures.
  --changes kinds   CYCLES times pass_latency.py's six changes (link down, link up,
                    routes deleted, added, addresses deleted, added), 100 ms apart,
                    after one round uncounted.
  --order FILE      also runs `BINARY watch` (text lines) the same way, and writes the
                    executable's functions that ran in either, most instructions first
                    (json's, then text's own): Scripts/link-order.txt, `make build
                    LINK_ORDER=1`'s link order (see its header).

Instruction counts are the same run after run (a figure for BENCHMARKS.md, not a
latency); the wall-clock side is pass_latency.py's. Needs valgrind, iproute2 and
util-linux (and, for --order, objdump and the Swift toolchain on the PATH, whose static
libraries it reads); a build with symbols (`swift build -c release`, not `make install`'s
stripped copy) makes the dump readable by `callgrind_annotate` too.
Traffic: none leaves the namespaces.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pass_latency import setup_namespace, sh  # noqa: E402


ORDER_HEADER = """\
# `make build LINK_ORDER=1`'s link order (the Makefile passes it to lld as --symbol-ordering-file):
# the functions the event path of `reachability watch` runs, most instructions first, so
# that a pass after an idle wait brings fewer pages and lines of code back into the caches
# (docs/BENCHMARKS-HISTORY.md, "Issue 30: the event path's code in one place"). Generated, not edited:
#   make build && unshare -rn python3 Benchmarks/callgrind_pass.py \\
#       .build/release/reachability --changes kinds --cycles 5 --order Scripts/link-order.txt
# A name no longer in the build is skipped.
"""
ROUTES = "ip route replace default via 192.0.2.2 dev vA; ip route replace ::/0 via 2001:db8:200::2 dev vA"


def routes():
    sh(ROUTES)


def cycle():
    sh("ip link set vA down")
    time.sleep(0.05)
    sh("ip link set vA up")
    routes()
    time.sleep(0.05)


def summarize(path, executable):
    """Instructions, passes, malloc calls and netlink reads, distinct functions with cost, the
    64-byte lines and 4 KiB pages of code that ran, and the functions of the executable
    that ran (mangled names, most instructions first: what `--order` writes)."""
    names, objects, self_cost, calls, owner = {}, {}, {}, {}, {}
    current = callee = obj = None
    in_call = False
    address = 0
    code_lines, code_pages = set(), set()
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?)(fn|ob)=\((\d+)\)(?: (.*))?", line)
            if m:
                is_call, kind, ident, name = m.groups()
                if kind == "ob":
                    if name:
                        objects[ident] = name
                    if not is_call:
                        obj = ident
                    continue
                if name:
                    names[ident] = name
                if is_call:
                    callee = ident
                else:
                    current, in_call = ident, False
                    owner[ident] = obj
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m:
                calls[callee] = calls.get(callee, 0) + int(m.group(1))
                in_call = True
                continue
            # A cost line: the instruction's address (0x…, +n, -n or *), its source line,
            # then the cost.
            m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*) \S+ (\d+)$", line)
            if m and current:
                position = m.group(1)
                if position.startswith("0x"):
                    address = int(position, 16)
                elif position != "*":
                    address += int(position)
                if in_call:
                    in_call = False  # the inclusive cost of the call just named
                    continue
                cost = int(m.group(2))
                self_cost[current] = self_cost.get(current, 0) + cost
                if cost:
                    code_lines.add(address >> 6)
                    code_pages.add(address >> 12)

    def called(pattern):
        return sum(n for ident, n in calls.items() if re.search(pattern, names.get(ident, "")))

    return {
        "instructions": sum(self_cost.values()),
        # The pass's functions are inlined into the reader's loop; each pass of these
        # changes (one target, whose lookups every one of them covers) writes its lookups
        # once, the one write of the reader's.
        "passes": called(r"^mnl_socket_sendto$"),
        "malloc": called(r"^malloc$"),
        # recvmsg(2), or recvmmsg(2), which the CNetlink shim makes through syscall(2).
        "reads": called(r"^recvmsg$") + called(r"^syscall$"),
        "functions": sum(1 for cost in self_cost.values() if cost > 0),
        "code_lines": len(code_lines),
        "code_pages": len(code_pages),
        "hot": [re.sub(r"'\d+$", "", names[ident])
                for ident, cost in sorted(self_cost.items(), key=lambda item: -item[1])
                if cost > 0 and objects.get(owner.get(ident), "").endswith(os.path.basename(executable))],
    }


def kinds():
    """pass_latency.py's six changes, in its order: link down; link up with the default
    routes back; the routes deleted; added; the addresses (and the IPv6 route) deleted;
    added back with the routes."""
    steps = [
        "ip link set vA down",
        "ip link set vA up; " + ROUTES,
        "ip route del default via 192.0.2.2 dev vA; ip route del ::/0 via 2001:db8:200::2 dev vA",
        ROUTES,
        "ip addr del 192.0.2.1/24 dev vA; ip addr del 2001:db8:200::1/64 dev vA; "
        "ip route del ::/0 via 2001:db8:200::2 dev vA 2>/dev/null || true",
        "ip addr add 192.0.2.1/24 dev vA; ip addr add 2001:db8:200::1/64 dev vA nodad; " + ROUTES,
    ]
    for step in steps:
        sh(step)
        time.sleep(0.1)


def profile(binary, arguments, changes, cycles, work):
    """Runs `BINARY ARGUMENTS` under callgrind in the namespace, makes the changes with
    the counters zeroed after start-up, and returns the dump's path."""
    os.makedirs(work)
    out = os.path.join(work, "callgrind.out")
    # --dump-instr: the addresses, for the code's lines and pages; --demangle=no: the
    # runtime's C++ symbols as the linker names them (for --order).
    watch = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--demangle=no", f"--callgrind-out-file={out}",
         os.path.abspath(binary)] + arguments, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=work)
    try:
        first = watch.stdout.readline()
        if not first:
            sys.exit("callgrind_pass: the watch printed nothing")
        time.sleep(2)  # the reader is waiting in poll(2): everything after this is a change's
        if changes != "cycles":
            # One round first, so that the first use of a type's metadata is not counted.
            cycle() if changes == "down" else kinds()
            time.sleep(0.5)
        sh(f"callgrind_control -z {watch.pid} >/dev/null 2>&1")
        if changes == "down":
            sh("ip link set vA down")
            time.sleep(0.3)
        else:
            for _ in range(cycles):
                cycle() if changes == "cycles" else kinds()
            time.sleep(0.5)
        sh(f"callgrind_control -d {watch.pid} >/dev/null 2>&1")
    finally:
        watch.terminate()
        watch.wait()
    dumps = sorted(p for p in os.listdir(work) if p.startswith("callgrind.out."))
    if not dumps:
        sys.exit("callgrind_pass: no dump")
    return os.path.join(work, dumps[0])


def shared_text_symbols():
    """The functions the toolchain's static libraries define in a plain `.text` section,
    with other functions (a few of the standard library's merged and specialized ones):
    naming one in the order would move that whole section, 1.6 MB of Swift.o, into the
    middle of the ordered code."""
    swift = shutil.which("swift")
    archives = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift_static") if swift else ""
    shared = set()
    for folder, _, files in os.walk(archives):
        for name in files:
            if not name.endswith(".a"):
                continue
            table = subprocess.run(["objdump", "-t", os.path.join(folder, name)], capture_output=True, text=True)
            for line in table.stdout.splitlines():
                # ADDRESS FLAGS SECTION<tab>SIZE [.hidden] NAME
                left, _, right = line.partition("\t")
                fields = right.split()
                if len(fields) >= 2 and left.split()[-1:] == [".text"]:
                    shared.add(fields[-1])
    return shared


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--changes", choices=["cycles", "down", "kinds"], default="cycles")
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--order", metavar="FILE", help="write the link order of the event path's functions")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="callgrind-pass.")
    runs = [["watch", "--json"]] + ([["watch"]] if args.order else [])
    hot = []
    peer = setup_namespace()
    time.sleep(0.3)
    try:
        dumps = [profile(args.binary, arguments, args.changes, args.cycles,
                         os.path.join(work, "json" if "--json" in arguments else "text")) for arguments in runs]
    finally:
        peer.kill()
    for arguments, dump in zip(runs, dumps):
        figures = summarize(dump, args.binary)
        hot += [name for name in figures["hot"] if name not in hot]
        print(f"{args.binary} {' '.join(arguments)}: changes {args.changes}"
              + (f" x{args.cycles}" if args.changes != "down" else ""))
        print("  instructions {instructions:,}, passes {passes}, malloc {malloc}, reads {reads}, "
              "functions run {functions}".format(**figures))
        print("  code run: {code_lines:,} lines of 64 bytes on {code_pages} pages of 4 KiB".format(**figures))
        if figures["passes"]:
            print(f"  per pass: instructions {figures['instructions'] / figures['passes']:,.0f}, "
                  f"malloc {figures['malloc'] / figures['passes']:.1f}")
        print(f"  dump: {dump}")
    if args.order:
        shared = shared_text_symbols()
        kept = [name for name in hot if name not in shared]
        with open(args.order, "w") as f:
            f.write(ORDER_HEADER + "".join(name + "\n" for name in kept))
        print(f"  order: {len(kept)} functions written to {args.order} "
              f"({len(hot) - len(kept)} left out: in a section shared with others)")


if __name__ == "__main__":
    main()
