#!/usr/bin/env python3
"""Checks that every relative link of README.md, CONTRIBUTING.md and docs/*.md resolves:
the file or folder exists, and a `#fragment` names a heading of the Markdown file it
points to (GitHub's anchors). Links with a scheme (https:, mailto:) are not checked.

Usage: python3 Scripts/check-links.py   (exit 1 when a link is broken)
"""
import glob, os, re, sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def lines(path):
    """(number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def anchors(path):
    """GitHub's anchors: the heading in lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    found, seen = set(), {}
    for _, line in lines(path):
        if re.match(r"#{1,6} ", line):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


broken = 0
for document in ["README.md", "CONTRIBUTING.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT)):
    path = os.path.join(ROOT, document)
    for number, line in lines(path):
        for link in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", link):
                continue
            target, _, fragment = link.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(resolved) or (
                    fragment and (not resolved.endswith(".md") or fragment not in anchors(resolved))):
                print(f"check-links: {document}:{number}: the link {link} does not resolve")
                broken += 1
sys.exit(1 if broken else 0)
