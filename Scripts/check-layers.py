#!/usr/bin/env python3
"""Checks that the folders of Sources/ReachabilityCore form layers with no upward
references: a file may use types declared in its own folder or in a folder below
it, never in one above. The order, bottom to top, is LAYERS; files directly in
Sources/ReachabilityCore (the public API) are the top layer. (The `Reachability`
module above it, Sources/Reachability, is NotificationCenter and Compat/ only.)

Usage: python3 Scripts/check-layers.py [--graph]   (exit 1 on a violation)
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "ReachabilityCore")
LAYERS = ["System", "Values", "Support", "Netlink", "Model", "Evaluation", "Resolution", "Monitor", "."]

DECL = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|final|indirect)\s+)*"
                  r"(?:struct|enum|class|protocol|actor|typealias)\s+([A-Z]\w*)", re.M)  # top-level only
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')

def files_by_layer():
    layout = {}
    for layer in LAYERS:
        folder = os.path.join(ROOT, layer)
        if not os.path.isdir(folder):
            continue
        names = sorted(f for f in os.listdir(folder) if f.endswith(".swift"))
        layout[layer] = [os.path.join(folder, f) for f in names]
    # Every folder must be a known layer.
    for entry in os.listdir(ROOT):
        if os.path.isdir(os.path.join(ROOT, entry)) and entry not in LAYERS and not entry.endswith(".docc"):
            sys.exit(f"check-layers: folder {entry} is in no layer; add it to LAYERS")
    return layout

def main():
    layout = files_by_layer()
    declared = {}  # type name -> layer
    sources = {}
    for layer, paths in layout.items():
        for path in paths:
            text = open(path, encoding="utf-8").read()
            code = STRING.sub('""', COMMENT.sub("", text))
            sources[path] = (layer, code)
            for name in DECL.findall(code):
                declared.setdefault(name, layer)
    order = {layer: i for i, layer in enumerate(LAYERS)}
    violations = []
    edges = set()
    for path, (layer, code) in sources.items():
        used = set(re.findall(r"\b[A-Z]\w*\b", code))
        for name in sorted(used):
            owner = declared.get(name)
            if owner is None or owner == layer:
                continue
            edges.add((layer, owner))
            if order[owner] > order[layer]:
                violations.append(f"{os.path.relpath(path, ROOT)} ({layer}) uses {name} from {owner}")
    if "--graph" in sys.argv:
        for a, b in sorted(edges, key=lambda e: (order[e[0]], order[e[1]])):
            print(f"{a} -> {b}" + ("   UPWARD" if order[b] > order[a] else ""))
    for v in violations:
        print("check-layers:", v)
    print(f"check-layers: {len(violations)} upward reference(s) among {len(sources)} files")
    return 1 if violations else 0

if __name__ == "__main__":
    sys.exit(main())
