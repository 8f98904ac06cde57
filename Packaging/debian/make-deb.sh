#!/usr/bin/env bash
# Makes the .deb from a staged `make install PREFIX=/usr` (what `make deb` runs).
#   Packaging/debian/make-deb.sh ROOT VERSION ARCH OUTPUT
# Adds what Debian asks of a binary package: compressed man pages and changelogs, the
# copyright file, md5sums, a control file whose Depends are the packages that own
# the shared libraries the executables load (found with ldd and dpkg -S: libmnl0,
# libc6, libstdc++6, libgcc-s1 on Debian 12), and the maintainer scripts beside this
# file (postinst, prerm, postrm: what dh_installsystemd writes for the two units, the
# wait-online one and the exporter's, installed, not enabled).
set -euo pipefail
root="$1" version="$2" arch="$3" output="$4"
here="$(cd "$(dirname "$0")" && pwd)"
top="$here/../.."
doc="$root/usr/share/doc/reachability"

[[ -n "$arch" ]] || { echo "make-deb: no architecture (dpkg --print-architecture)" >&2; exit 1; }
mkdir -p "$doc" "$root/DEBIAN"
gzip -9n "$root"/usr/share/man/man1/*.1
cp "$here/copyright" "$doc/copyright"
gzip -9nc "$top/CHANGELOG.md" >"$doc/changelog.gz"
# A native package's Debian changelog: one entry per packaged release.
{
    printf 'reachability (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Release %s: see /usr/share/doc/reachability/changelog.gz.\n\n' "$version"
    printf ' -- Reachability for Linux authors <reachability-linux@users.noreply.github.com>  %s\n' \
        "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$doc/changelog.Debian.gz"
chmod 644 "$doc"/*

# Depends: the packages owning the libraries the executables load.
depends="$(
    for executable in "$root/usr/bin/reachability" "$root/usr/libexec/reachability/reachability-full"; do
        ldd "$executable" | awk '$3 ~ /^\// { print $3 }'
    done | sort -u | while read -r library; do
        dpkg -S "$(readlink -f "$library")" 2>/dev/null || dpkg -S "$library" 2>/dev/null || true
    done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g'
)"
[[ "$depends" == *libmnl0* ]] || { echo "make-deb: no libmnl0 among the dependencies ($depends)" >&2; exit 1; }

(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<EOF
Package: reachability
Version: $version
Architecture: $arch
Maintainer: Reachability for Linux authors <reachability-linux@users.noreply.github.com>
Installed-Size: $(du -ks --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: net
Priority: optional
Description: network reachability from the kernel's routing events
 The reachability command reports whether a host, an address or the Internet
 is reachable now and over what kind of link, prints each change as the
 kernel's rtnetlink events report it, waits for the network at boot (a
 systemd unit for network-online.target, installed but not enabled), tells the
 real Internet from a captive portal, and serves all of it to Prometheus,
 for every network namespace of the host if asked (a systemd unit, installed
 but not enabled).
EOF
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
for script in postinst prerm postrm; do
    install -m 755 "$here/$script" "$root/DEBIAN/$script"
done
dpkg-deb --root-owner-group -Zxz --build "$root" "$output" >/dev/null
echo "make-deb: $output"
