#!/usr/bin/env bash
# Every library module's DocC documentation builds without a warning (an unresolved or
# ambiguous link, a bad article): its symbol graph from the modules `swift build
# --build-tests` built, then `docc convert` with its catalog, if any.
# Usage: bash Scripts/check-docc.sh [OUTPUT]   (OUTPUT keeps each module's .doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each module, then the modules it re-exports (`@_exported import`, comma-separated) whose
# symbols its documentation shows as its own (the DocC plugin would drop them).
modules=(
    "ReachabilityBase" # also on its own: the Swift Package Index's plugin shows it only so
    "ReachabilityCore ReachabilityBase"
    "Reachability ReachabilityCore,ReachabilityBase"
    "ReachabilityCompat"
    "Connectivity"
    "ConnectivityURLSession" # Connectivity's symbols stay in its own: one protocol name is in both
    "ReachabilityMetrics"
    "ReachabilityServiceLifecycle"
    "ReachabilityTestKit"
    "ReachabilityObservable"
)
output="$(realpath -m "${1:-$(mktemp -d)}")"
[[ -n "${1:-}" ]] || trap 'rm -rf "$output"' EXIT
# The modules built, and the C modules they import: CNetlink, SwiftPM's module maps for the
# dependencies' C targets and those targets' own.
search=(-I .build/debug/Modules)
for map in Sources/CNetlink/module.modulemap .build/debug/*.build/module.modulemap \
    .build/checkouts/*/Sources/*/include/module.modulemap; do
    search+=(-Xcc -fmodule-map-file="$map")
done
for entry in "${modules[@]}"; do
    read -r module reexported <<<"$entry"
    rm -rf "${output:?}/$module.symbols" && mkdir -p "$output/$module.symbols"
    swift-symbolgraph-extract -module-name "$module" -target "$(uname -m)-unknown-linux-gnu" \
        "${search[@]}" -minimum-access-level public \
        -emit-extension-block-symbols -skip-inherited-docs -output-dir "$output/$module.symbols" \
        ${reexported:+-experimental-allowed-reexported-modules="$reexported"}
    catalog="$PWD/Sources/$module/$module.docc"
    # From $output: without a catalog argument docc looks for one in its directory.
    (cd "$output" && docc convert $([[ -d "$catalog" ]] && echo "$catalog") --warnings-as-errors \
        --additional-symbol-graph-dir "$module.symbols" --output-path "$module.doccarchive")
done
