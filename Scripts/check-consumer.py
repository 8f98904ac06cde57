#!/usr/bin/env python3
"""Depends on this package as a user would, and measures what that costs.

Clones the repository (its committed HEAD, as branch `main`: the README's lines ask
for the branch, as the published repository has no release tag on it; nothing is
tagged) into a scratch folder named `reachability-linux`, as a user's clone or
SwiftPM's checkout is named, and makes consumer packages whose Package.swift carries
the README's dependency lines exactly, with the placeholder URL replaced by the clone's file URL.
For each it resolves the graph and counts the pins of Package.resolved and the size
of `.build/checkouts`:

- the core line (`traits: []`): `Reachability`, `ReachabilityCore`,
  `ReachabilityCompat`, `ReachabilityTestKit` and `ReachabilityObservable`, which must
  resolve at most 2 packages besides this one and fetch under 20 MB of checkouts
  (issue 26); this consumer is also built and run, its ReachabilityCore-only program
  must load no Foundation library and its Reachability-only one no Observation (ldd);
- the Connectivity, Metrics and plain (every trait) lines: resolved and reported; the
  Metrics line must not resolve SwiftNIO, and its consumer builds and runs.

Usage: python3 Scripts/check-consumer.py [--all] [--keep]   (exit 1 when a limit is
broken or a README line is missing; --all adds the Connectivity, Metrics and plain
lines, which CI leaves out; --keep leaves the scratch folder and prints its path)
"""
import json, os, re, shutil, subprocess, sys, tempfile

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PLACEHOLDER = "https://github.com/…/reachability-linux"
CORE_PINS_LIMIT = 3  # this package + 2
CORE_CHECKOUT_LIMIT = 20 * 1000 * 1000

# (name, README dependency line's traits argument, products, limits apply, build and run)
CASES = [
    ("core", ", traits: []",
     ["Reachability", "ReachabilityCore", "ReachabilityCompat", "ReachabilityTestKit", "ReachabilityObservable"],
     True, True),
    ("connectivity", ', traits: ["Connectivity"]', ["Connectivity"], False, False),
    ("metrics", ', traits: ["Metrics"]', ["ReachabilityMetrics"], False, True),
    ("everything", "", ["Reachability", "Connectivity"], False, False),
]

PROGRAMS = {
    "Reachability": 'import Reachability\nprint("Reachability:", try Reachability().currentReachabilityStatus)\n',
    "ReachabilityCore": 'import ReachabilityCore\nprint("ReachabilityCore:", try PathMonitor().currentPath.status)\n',
    "ReachabilityCompat": 'import ReachabilityCompat\nprint("ReachabilityCompat:", NWPathMonitor().currentPath.status)\n',
    "ReachabilityTestKit": 'import ReachabilityTestKit\nprint("ReachabilityTestKit:", SimulatedNetwork().state.path.status)\n',
    "ReachabilityObservable": 'import Reachability\nimport ReachabilityObservable\n'
    + 'print("ReachabilityObservable:", try PathModel(PathMonitor()).status)\n',
    "Connectivity": "import Connectivity\n_ = ConnectivityConfiguration()\n",
    "ReachabilityMetrics": "import ReachabilityMetrics\nReachabilityMetrics().record(.unsatisfied)\nprint(\"ReachabilityMetrics: recorded\")\n",
}


def run(command, cwd, quiet=True, check=True):
    result = subprocess.run(command, cwd=cwd, capture_output=quiet, text=True)
    if result.returncode != 0 and not check:
        return ""
    if result.returncode != 0:
        if quiet:
            sys.stderr.write(result.stdout + result.stderr)
        sys.exit(f"check-consumer: `{' '.join(command)}` failed in {cwd}")
    return result.stdout if quiet else ""


def readme_line(readme, traits):
    """The README's dependency line with this traits argument, exactly as written."""
    core = f'.package(url: "{PLACEHOLDER}", branch: "main", traits: []),'
    if core not in readme:
        sys.exit(f"check-consumer: README.md lacks the dependency line\n    {core}")
    # The other lines are the core one with the traits the README's table names.
    if traits and traits.lstrip(", ") not in readme:
        sys.exit(f"check-consumer: README.md's table names no `{traits.lstrip(', ')}`")
    return core.replace(", traits: []", traits)


def checkout_bytes(folder):
    total = 0
    for root, _, files in os.walk(os.path.join(folder, ".build", "checkouts")):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def main():
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    scratch = tempfile.mkdtemp(prefix="reachability-consumer-")
    clone = os.path.join(scratch, "reachability-linux")
    run(["git", "clone", "-q", "file://" + REPO, clone], scratch)
    run(["git", "checkout", "-q", "-B", "main"], clone)  # HEAD, whichever branch it was checked out from
    failures = []
    rows = []
    # The core line always (its limits are the point); the others with --all (they only
    # report, and each fetches about 47 MB of checkouts).
    cases = CASES if "--all" in sys.argv else [case for case in CASES if case[3]]
    for name, traits, products, limited, build in cases:
        line = readme_line(readme, traits)
        consumer = os.path.join(scratch, "consumer-" + name)
        targets = []
        for product in products:
            target = "Use" + product
            os.makedirs(os.path.join(consumer, "Sources", target))
            with open(os.path.join(consumer, "Sources", target, "main.swift"), "w") as source:
                source.write(PROGRAMS[product])
            targets.append(
                f'        .executableTarget(name: "{target}", dependencies: '
                f'[.product(name: "{product}", package: "reachability-linux")]),'
            )
        manifest = "\n".join([
            "// swift-tools-version: 6.1",
            "import PackageDescription",
            "let package = Package(",
            f'    name: "Consumer{name.capitalize()}",',
            "    dependencies: [",
            "        " + line.replace(PLACEHOLDER, "file://" + clone),
            "    ],",
            "    targets: [",
            *targets,
            "    ]",
            ")",
            "",
        ])
        with open(os.path.join(consumer, "Package.swift"), "w") as out:
            out.write(manifest)
        run(["swift", "package", "resolve"], consumer)
        pins = json.load(open(os.path.join(consumer, "Package.resolved")))["pins"]
        size = checkout_bytes(consumer)
        names = sorted(pin["identity"] for pin in pins)
        rows.append((name, traits.lstrip(", ") or "(default: every trait)", len(pins), size, names))
        if name == "metrics" and "swift-nio" in names:
            failures.append(f"metrics: resolves SwiftNIO: {', '.join(names)}")
        if limited:
            if len(pins) > CORE_PINS_LIMIT:
                failures.append(f"{name}: {len(pins)} pins (at most {CORE_PINS_LIMIT}): {', '.join(names)}")
            if size >= CORE_CHECKOUT_LIMIT:
                failures.append(f"{name}: {size / 1e6:.1f} MB of checkouts (under {CORE_CHECKOUT_LIMIT / 1e6:.0f} MB)")
        if build:
            run(["swift", "build"], consumer)
            for target in targets:
                executable = re.search(r'name: "(\w+)"', target).group(1)
                path = os.path.join(consumer, ".build", "debug", executable)
                print(run([path], consumer).strip())
                # Observation is ReachabilityObservable's alone: a Reachability program doesn't load it.
                if executable == "UseReachability" and "libswiftObservation" in run(["ldd", path], consumer):
                    failures.append(f"{name}: a Reachability-only program loads libswiftObservation")
                # A program that imports only ReachabilityCore loads no Foundation
                # (DESIGN §4.1): the dynamically linked build's libraries say so.
                if executable == "UseReachabilityCore":
                    loaded = [line.split()[0] for line in run(["ldd", path], consumer).splitlines() if line.strip()]
                    foundation = [library for library in loaded if "foundation" in library.lower()]
                    if foundation:
                        failures.append(f"{name}: a ReachabilityCore-only program loads {', '.join(foundation)}")
                    else:
                        print(f"check-consumer: UseReachabilityCore loads no Foundation ({len(loaded)} libraries)")
    print("check-consumer: what a dependent resolves (README's lines, a clone by file URL, branch main)")
    print(f"  {'line':<13} {'traits':<27} {'pins':>4} {'checkouts':>10}  packages")
    for name, traits, count, size, names in rows:
        print(f"  {name:<13} {traits:<27} {count:>4} {size / 1e6:>8.1f} MB  {', '.join(names)}")
    if "--keep" in sys.argv:
        print("check-consumer: kept", scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    for failure in failures:
        print("check-consumer:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
