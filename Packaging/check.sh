#!/usr/bin/env bash
# What `make install` and `make deb` ship (docs/OPERATIONS.md), from the release build in
# SCRATCH (`make build SCRATCH=…`, not rebuilt), the alerting rules' tests and the
# Kubernetes manifest. Needs root (dpkg -i, unshare -m), man-db, file, systemd (systemctl,
# systemd-analyze), promtool, lintian, and kubernetes-validate and yamllint (PyPI); .ci/run
# installs them and runs it.
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

# Completions, the units with ExecStart rewritten for PREFIX (the wait-online one verified
# against the staged files; the exporter's, which needs sysinit.target, once the package is
# installed below), the alerting rules.
bash -n "$stage/usr/share/bash-completion/completions/reachability"
unit=/usr/lib/systemd/system/reachability-wait-online.service
exporter_unit=/usr/lib/systemd/system/reachability-exporter.service
grep -q '^ExecStart=/usr/bin/reachability wait' "$stage$unit"
grep -q '^ExecStart=/usr/bin/reachability exporter --all-namespaces' "$stage$exporter_unit"
systemd-analyze verify --root="$stage" "$unit"
test -f "$stage/usr/share/reachability/prometheus/reachability.rules.yml"
(cd Packaging/prometheus && promtool check rules reachability.rules.yml && promtool test rules reachability.rules.test.yml)

# The Kubernetes manifest: yamllint's defaults but for long lines and a leading `---` (as
# in the rules files, linted too), and the API's schemas, strictly (an unknown field
# fails), of Kubernetes 1.30 (the first with securityContext.appArmorProfile) and 1.37.
manifest=Packaging/kubernetes/reachability-daemonset.yaml
yamllint --strict -d '{extends: default, rules: {line-length: disable, document-start: disable}}' \
    "$manifest" Packaging/prometheus/*.yml
for version in 1.30.0 1.37.0; do kubernetes-validate --strict --quiet -k "$version" "$manifest"; done

# The Debian package: lintian finds no error and no warning; its maintainer scripts
# (Packaging/debian) are in it, root's, mode 0755, POSIX sh with `set -e`. It installs with
# dpkg -i, runs, and removes cleanly (none of its files left behind). Its scripts reload
# systemd at install and remove and stop the unit at remove: dpkg runs as if systemd ran
# (in a mount namespace of its own: /run/systemd/system there, policy-rc.d, a container's,
# allowing, and a systemctl that writes down what it is asked). Enabled as OPERATIONS.md
# says (`systemctl enable` edits the links without a running systemd), the units stay
# enabled through a remove, and a purge, after a remove or straight from installed,
# removes the links, so that an install after it is not enabled.
make deb SCRATCH="$scratch"
deb="$(ls "$scratch"/deb/reachability_*.deb)"
lintian_out="$(lintian "$deb" 2>&1 | grep -v '^running with root privileges' || true)"
echo "$lintian_out"
if grep -q '^[EW]:' <<<"$lintian_out"; then fail "lintian reports errors or warnings for $deb"; fi
control="$(dpkg-deb --ctrl-tarfile "$deb" | tar -tvf -)"
mkdir "$stage/DEBIAN" && dpkg-deb --control "$deb" "$stage/DEBIAN"
for script in postinst prerm postrm; do
    grep -Eq "^-rwxr-xr-x root/root .* \./$script\$" <<<"$control" || fail "$deb has no $script of mode 0755: $control"
    { [[ "$(head -1 "$stage/DEBIAN/$script")" == '#!/bin/sh' ]] && grep -q '^set -e$' "$stage/DEBIAN/$script" &&
        ! grep -q '#DEBHELPER#' "$stage/DEBIAN/$script" && dash -n "$stage/DEBIAN/$script"; } ||
        fail "$script is not a POSIX sh script with set -e"
done
if dpkg -s reachability >/dev/null 2>&1; then fail "a reachability package is installed already"; fi
link=/etc/systemd/system/network-online.target.wants/reachability-wait-online.service
exporter_link=/etc/systemd/system/multi-user.target.wants/reachability-exporter.service
for l in "$link" "$exporter_link"; do
    if [[ -L "$l" || -e "$l" ]]; then fail "$l exists already"; fi
done
trap 'dpkg -P reachability >/dev/null 2>&1 || true; rm -f "$link" "$exporter_link"; rmdir "${link%/*}" 2>/dev/null || true; rm -rf "$stage"' EXIT
as_if="$stage/as-if-systemd" asked="$stage/systemctl-asked"
mkdir "$as_if"
printf '#!/bin/sh\nif [ "${DPKG_MAINTSCRIPT_PACKAGE:-}" = reachability ]; then echo "$*" >>"$ASKED"; fi\n' \
    >"$as_if/systemctl"
printf '#!/bin/sh\nexit 0\n' >"$as_if/policy-rc.d"
chmod 755 "$as_if/systemctl" "$as_if/policy-rc.d"
dpkg_as_if_systemd() {
    : >"$asked"
    unshare -m env AS_IF="$as_if" ASKED="$asked" sh -ec '
        mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system
        if [ -e /usr/sbin/policy-rc.d ]; then mount --bind "$AS_IF/policy-rc.d" /usr/sbin/policy-rc.d; fi
        PATH="$AS_IF:$PATH" exec dpkg "$@"' sh "$@"
}
asked() { # DPKG-COMMAND SYSTEMCTL-ARGUMENTS: what dpkg's run of the scripts must have asked
    grep -qxF -- "$2" "$asked" || fail "$1 did not run systemctl $2 (it ran: $(paste -sd, "$asked"))"
}
dpkg_as_if_systemd -i "$deb"
asked 'dpkg -i' '--system daemon-reload'
# Not a word from systemd-analyze (an unknown or misspelt setting is only a warning).
verified="$(systemd-analyze verify "$exporter_unit" 2>&1)" && [[ -z "$verified" ]] ||
    fail "systemd-analyze verify $exporter_unit: $verified"
files="$(dpkg -L reachability | while read -r f; do if [[ -f "$f" ]]; then echo "$f"; fi; done)"
/usr/bin/reachability --version | grep -qx "$(sed -n 's/^VERSION = //p' Makefile)"
/usr/bin/reachability status >/dev/null || [[ $? == 1 ]] # 0 reachable, 1 not: both answers
/usr/bin/reachability check --help | grep -q 'OVERVIEW: Check whether the Internet'
systemctl enable reachability-wait-online.service reachability-exporter.service
for l in "$link" "$exporter_link"; do [[ -L "$l" ]] || fail "systemctl enable made no $l"; done
dpkg_as_if_systemd -r reachability
asked 'dpkg -r' 'stop reachability-wait-online.service reachability-exporter.service'
asked 'dpkg -r' '--system daemon-reload'
for f in $files; do
    if [[ -e "$f" ]]; then fail "dpkg -r left $f behind"; fi
done
for l in "$link" "$exporter_link"; do
    [[ -L "$l" ]] || fail "dpkg -r removed $l (a remove keeps configuration)"
done
dpkg_as_if_systemd -P reachability
for l in "$link" "$exporter_link"; do
    if [[ -L "$l" ]]; then fail "dpkg -P after dpkg -r left $l behind"; fi
done
asked 'dpkg -P' 'daemon-reload'
dpkg_as_if_systemd -i "$deb"
for l in "$link" "$exporter_link"; do
    if [[ -L "$l" ]]; then fail "installed after a purge, the unit is enabled: $l"; fi
done
systemctl enable reachability-wait-online.service reachability-exporter.service
dpkg_as_if_systemd -P reachability
for l in "$link" "$exporter_link"; do
    if [[ -L "$l" ]]; then fail "dpkg -P left $l behind"; fi
done
if dpkg -s reachability >/dev/null 2>&1; then fail "dpkg -P left reachability known to dpkg"; fi
trap 'rm -rf "$stage"' EXIT
echo "packaging: passed"
