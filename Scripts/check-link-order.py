#!/usr/bin/env python3
"""Checks that the release build laid out its event path as Scripts/link-order.txt says
(the Makefile's LINK_ORDER, docs/BENCHMARKS-HISTORY.md "Issue 30: the event path's code
in one place"): that most of the functions the file names are still in the build, and that
they sit together, not scattered over the executable's text.

The file is generated from a profile and names functions by their mangled names, which
change when their code's signature or specialization does; lld skips a name no longer
in the build, so a stale file would quietly lose what it buys. Fails when fewer than
MINIMUM of the names are left, or when those left spread over more than SPREAD times
their own size (an unordered link spreads them over megabytes). Regenerate it with the
command in its header.

Usage: python3 Scripts/check-link-order.py BINARY   (the unstripped release build;
exit 1 when the order is stale or was not applied)
"""
import os
import subprocess
import sys

ORDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "link-order.txt")
MINIMUM = 0.8
SPREAD = 2.0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    names = []
    with open(ORDER) as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if name:
                names.append(name)
    # Local symbols too (t): a specialization or a private function is one.
    listing = subprocess.run(["nm", "--defined-only", "-S", binary], capture_output=True, text=True, check=True)
    symbols = {}
    for line in listing.stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            symbols.setdefault(fields[3], (int(fields[0], 16), int(fields[1], 16)))
    found = [symbols[name] for name in names if name in symbols]
    share = len(found) / len(names) if names else 0
    size = sum(length for _, length in found)
    span = max((start + length for start, length in found), default=0) - min((s for s, _ in found), default=0)
    print(f"link order: {len(found)} of {len(names)} functions in {binary}, "
          f"{size // 1024} KiB of code over {span // 1024} KiB")
    failures = []
    if share < MINIMUM:
        failures.append(
            f"only {share:.0%} of Scripts/link-order.txt's functions are left in the build (at least "
            f"{MINIMUM:.0%}): regenerate it with the command in its header")
    if found and span > SPREAD * size:
        failures.append(
            f"they spread over {span // 1024} KiB, more than {SPREAD:g} times their size: the build was "
            "not linked in their order (the Makefile's LINK_ORDER: lld, function sections)")
    for failure in failures:
        print(f"check-link-order: {failure}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
