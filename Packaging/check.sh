#!/usr/bin/env bash
# What `make install` and `make deb` ship (docs/OPERATIONS.md), from the release build in
# SCRATCH (`make build SCRATCH=…`, not rebuilt), and the alerting rules' tests. Needs root
# (dpkg -i), man-db, file, systemd-analyze, promtool and lintian; .ci/run runs it.
# Usage: bash Packaging/check.sh SCRATCH
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${1:?usage: bash Packaging/check.sh SCRATCH}"
fail() { echo "packaging: $*" >&2; exit 1; }

# `make install` into a staging root: both executables, stripped; the installed
# `reachability` finds reachability-full in ../libexec/reachability.
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
make install SCRATCH="$scratch" DESTDIR="$stage" PREFIX=/usr
bin="$stage/usr/bin/reachability"
full="$stage/usr/libexec/reachability/reachability-full"
"$bin" --version
test -x "$full"
"$bin" check --help | grep -q 'OVERVIEW: Check whether the Internet'
"$bin" interfaces >/dev/null
for executable in "$bin" "$full"; do
    if file "$executable" | grep -q 'not stripped'; then fail "$executable is not stripped"; fi
    echo "packaging: installed $(basename "$executable"): $(stat -c %s "$executable") bytes"
done

# A man page per subcommand and no other (no reachability.help.1), each rendered without a
# groff warning (`man --warnings` prints them on stderr), with the command's name (SYNOPSIS:
# `reachability wait`; headers of long names are cut short) and a whatis entry, the page's
# name and summary as man-db's lexgrog reads NAME for `man -k` (lintian's bad-whatis-entry
# when it can't). The top-level page lists the subcommands.
man1="$stage/usr/share/man/man1"
pages="reachability reachability.check reachability.exporter reachability.interfaces reachability.status"
pages+=" reachability.wait reachability.watch"
installed="$(cd "$man1" && ls | sed 's/\.1$//' | LC_ALL=C sort | xargs)"
[[ "$installed" == "$pages" ]] || fail "installed man pages are $installed"
for page in $pages; do
    warnings="$(MANWIDTH=80 man --warnings -l "$man1/$page.1" 2>&1 >/dev/null)"
    [[ -z "$warnings" ]] || fail "man page $page.1 renders with warnings: $warnings"
    text="$(MANWIDTH=80 man -l "$man1/$page.1" 2>/dev/null)"
    { grep -q '^NAME' <<<"$text" && grep -q "^ *${page//./ } " <<<"$text"; } || fail "man page $page.1 does not render"
    whatis="$(lexgrog "$man1/$page.1")" || fail "lexgrog can't read man page $page.1's NAME: $whatis"
    [[ "$whatis" == "$man1/$page.1: \"$page - "[!\"]*\" ]] || fail "man page $page.1's whatis entry is $whatis"
done
commands="$(MANWIDTH=80 man -l "$man1/reachability.1" 2>/dev/null | sed -n '/^COMMANDS/,/^EXIT STATUS/p')"
for command in status watch wait check interfaces exporter; do
    grep -q "^ *$command " <<<"$commands" || fail "reachability(1) lists no $command under COMMANDS"
done

# Completions, the unit with ExecStart rewritten for PREFIX (verified against the staged
# files), the alerting rules.
bash -n "$stage/usr/share/bash-completion/completions/reachability"
unit=/usr/lib/systemd/system/reachability-wait-online.service
grep -q '^ExecStart=/usr/bin/reachability wait' "$stage$unit"
systemd-analyze verify --root="$stage" "$unit"
test -f "$stage/usr/share/reachability/prometheus/reachability.rules.yml"
(cd Packaging/prometheus && promtool check rules reachability.rules.yml && promtool test rules reachability.rules.test.yml)

# The Debian package: lintian finds no error and no warning; it installs with dpkg -i,
# runs, and removes cleanly (none of its files left behind).
make deb SCRATCH="$scratch"
deb="$(ls "$scratch"/deb/reachability_*.deb)"
lintian_out="$(lintian "$deb" 2>&1 | grep -v '^running with root privileges' || true)"
echo "$lintian_out"
if grep -q '^[EW]:' <<<"$lintian_out"; then fail "lintian reports errors or warnings for $deb"; fi
if dpkg -s reachability >/dev/null 2>&1; then fail "a reachability package is installed already"; fi
dpkg -i "$deb"
trap 'dpkg -r reachability >/dev/null 2>&1 || true; rm -rf "$stage"' EXIT
files="$(dpkg -L reachability | while read -r f; do if [[ -f "$f" ]]; then echo "$f"; fi; done)"
/usr/bin/reachability --version | grep -qx "$(sed -n 's/^VERSION = //p' Makefile)"
/usr/bin/reachability status >/dev/null || [[ $? == 1 ]] # 0 reachable, 1 not: both answers
/usr/bin/reachability check --help | grep -q 'OVERVIEW: Check whether the Internet'
dpkg -r reachability
trap 'rm -rf "$stage"' EXIT
for f in $files; do
    if [[ -e "$f" ]]; then fail "dpkg -r left $f behind"; fi
done
echo "packaging: passed"
