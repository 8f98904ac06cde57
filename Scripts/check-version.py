#!/usr/bin/env python3
"""The release's version is the same everywhere it is written (issue 29): the CLI's
`--version` (Sources/ReachabilityFullCLI/Main.swift), the Makefile's VERSION (the .deb),
CHANGELOG.md's newest release section, README.md's `from:` (the line for once a release
tag exists) and docs/OPERATIONS.md's .deb name.

Usage: python3 Scripts/check-version.py   (exit 1, naming each place that differs)
"""
import os, re, sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def read(path):
    return open(os.path.join(ROOT, path), encoding="utf-8").read()


def main():
    found = {}
    cli = re.search(r'version: "([^"]+)"', read("Sources/ReachabilityFullCLI/Main.swift"))
    found["reachability --version (Sources/ReachabilityFullCLI/Main.swift)"] = [cli.group(1) if cli else None]
    make = re.search(r"^VERSION = (\S+)$", read("Makefile"), re.M)
    found["Makefile VERSION"] = [make.group(1) if make else None]
    release = re.search(r"^## (\d+\.\d+\.\d+\S*) — \d{4}-\d\d-\d\d$", read("CHANGELOG.md"), re.M)
    found["CHANGELOG.md's newest release (## X.Y.Z — YYYY-MM-DD)"] = [release.group(1) if release else None]
    readme = read("README.md")
    found["README.md's from:"] = sorted(set(re.findall(r'from: "([^"]+)"', readme))) or [None]
    operations = read("docs/OPERATIONS.md")
    found["docs/OPERATIONS.md's .deb name"] = sorted(set(re.findall(r"reachability_([^_]+)_amd64\.deb", operations))) or [None]
    versions = {version for values in found.values() for version in values}
    if len(versions) != 1 or None in versions:
        for place, values in found.items():
            print(f"check-version: {place}: {', '.join(str(v) for v in values)}", file=sys.stderr)
        sys.exit("check-version: the version differs between these places")
    print(f"check-version: {versions.pop()} everywhere")


if __name__ == "__main__":
    main()
