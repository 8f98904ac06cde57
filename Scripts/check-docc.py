#!/usr/bin/env python3
"""Builds the DocC documentation of every library module and fails on any DocC warning
(an unresolved or ambiguous symbol link, a bad article), as
`swift package generate-documentation --target MODULE` would show them.

Fast: the symbol graphs are extracted (swift-symbolgraph-extract, public symbols and
extension blocks, as the DocC plugin asks) from the modules the debug build already
built, and `docc convert` runs on each with its catalog, if any; the plugin itself
rebuilds the package for its symbol graphs (minutes).

Run it after `swift build --build-tests`. Usage: python3 Scripts/check-docc.py [--keep]
"""
import importlib.util, os, re, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MODULES = [
    "ReachabilityCore", "Reachability", "ReachabilityCompat", "Connectivity", "ConnectivityURLSession",
    "ReachabilityMetrics", "ReachabilityServiceLifecycle", "ReachabilityTestKit", "ReachabilityObservable",
]


def module_flags():
    """-I and -Xcc flags from the compile command of ReachabilityIntegrationTests, a
    client of every library module (read from .build/debug.yaml by check-doc-examples.py's
    functions), and the target triple."""
    spec = importlib.util.spec_from_file_location(
        "check_doc_examples", os.path.join(ROOT, "Scripts", "check-doc-examples.py"))
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    plan = examples.build_plan()
    args = examples.command_args(plan, r"C\.ReachabilityIntegrationTests-[^\"]*-debug\.module")
    return examples.module_flags(plan, "ReachabilityIntegrationTests"), args[args.index("-target") + 1]


def main():
    flags, target = module_flags()
    scratch = tempfile.mkdtemp(prefix="check-docc-")
    total = 0
    for module in MODULES:
        graphs = os.path.join(scratch, module + ".symbols")
        os.makedirs(graphs)
        extract = subprocess.run(
            ["swift-symbolgraph-extract", "-module-name", module, "-target", target,
             "-minimum-access-level", "public", "-emit-extension-block-symbols",
             "-skip-inherited-docs", "-output-dir", graphs] + flags,
            capture_output=True, text=True)
        if extract.returncode != 0:
            sys.exit(f"check-docc: no symbol graph for {module}:\n{extract.stderr}")
        catalog = os.path.join(ROOT, "Sources", module, module + ".docc")
        convert = subprocess.run(
            ["docc", "convert"] + ([catalog] if os.path.isdir(catalog) else [])
            + ["--additional-symbol-graph-dir", graphs, "--fallback-display-name", module,
               "--fallback-bundle-identifier", module, "--output-path",
               os.path.join(scratch, module + ".doccarchive"), "--diagnostic-level", "warning"],
            capture_output=True, text=True, cwd=ROOT)
        output = convert.stdout + convert.stderr
        warnings = len(re.findall(r"^warning:|: warning:", output, re.M))
        total += warnings
        if convert.returncode != 0 or warnings:
            print(output)
        print(f"check-docc: {module}: {warnings} warning(s)")
    if "--keep" in sys.argv:
        print("check-docc: kept", scratch)
    else:
        subprocess.run(["rm", "-rf", scratch])
    if total:
        sys.exit(f"check-docc: {total} DocC warning(s)")


if __name__ == "__main__":
    main()
