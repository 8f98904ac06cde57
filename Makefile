# Builds and installs the `reachability` command, its man pages, shell completions
# and two systemd units (the wait-online one; the exporter of every network namespace).
#
#   make                       # release build (Swift runtime linked in statically), man pages
#   sudo make install          # into /usr/local (PREFIX=/usr, DESTDIR=… for packaging)
#   sudo make uninstall
#   make deb                   # .build/deb/reachability_VERSION_ARCH.deb (dpkg -i it)
#
# `install` and `deb` install what `make` built (they build only what is missing, so
# `sudo make install` compiles nothing as root): run `make` again after a change.
# SCRATCH=DIR builds in DIR instead of .build (CI keeps its release build apart from
# the debug one, so that the two can run at once). SwiftPM rebuilds the modules two
# products share whenever the product it builds changes (reachability after
# reachability-full: 64 s), so nothing here builds a product again once it exists.
#
# Two executables (docs/DESIGN.md §4.5): bin/reachability runs status, watch, wait and
# interfaces itself, on the core library alone; for anything else it runs
# libexec/reachability/reachability-full, the whole command (Connectivity, SwiftNIO,
# TLS, Prometheus). Both are stripped on install; to keep their symbols:
#   make install INSTALL_PROGRAM='install -m 755'
# Nothing here needs root but writing into PREFIX.

PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_PROGRAM ?= install -m 755 -s
BINDIR = $(DESTDIR)$(PREFIX)/bin
LIBEXECDIR = $(DESTDIR)$(PREFIX)/libexec/reachability
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
UNITDIR = $(DESTDIR)$(PREFIX)/lib/systemd/system
RULESDIR = $(DESTDIR)$(PREFIX)/share/reachability/prometheus
UNITS = reachability-wait-online.service reachability-exporter.service
SCRATCH ?= .build
RELEASE = $(SCRATCH)/release
MANPAGES = $(SCRATCH)/man
# The release (CHANGELOG.md's newest section; `reachability --version` says the same).
VERSION = 0.1.0
DEB_ARCH = $(shell dpkg --print-architecture 2>/dev/null)
DEB_ROOT = $(SCRATCH)/deb/root
DEB = $(SCRATCH)/deb/reachability_$(VERSION)_$(DEB_ARCH).deb

# LINK_ORDER=1: each function in a section of its own, which lld lays out in the order of
# Scripts/link-order.txt (the functions a change runs, hottest first; docs/DESIGN.md §8),
# so that a change after an idle wait finds its code on fewer pages. Off by default: the
# list names functions by mangled name and goes stale as the code changes.
ifeq ($(LINK_ORDER),1)
ORDER_FLAGS = -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xlinker --symbol-ordering-file=$(CURDIR)/Scripts/link-order.txt -Xlinker --no-warn-symbol-ordering
endif
SWIFT_RELEASE = swift build -c release --scratch-path $(SCRATCH) --static-swift-stdlib $(ORDER_FLAGS)

.PHONY: all build man install uninstall deb

all: build
	@$(MAKE) --no-print-directory $(MANPAGES)/reachability.1

build:
	@# SwiftPM does not see the order file: a new one needs a new link.
	@if [ -n "$(ORDER_FLAGS)" ] && [ Scripts/link-order.txt -nt $(RELEASE)/reachability ]; then \
		rm -f $(RELEASE)/reachability $(RELEASE)/reachability-full; fi
	$(SWIFT_RELEASE) --product reachability
	$(SWIFT_RELEASE) --product reachability-full

$(RELEASE)/reachability $(RELEASE)/reachability-full:
	$(MAKE) --no-print-directory build

# swift-argument-parser's generate-manual tool (what its plugin runs): a page per
# subcommand, from the release build of the full command. Run directly rather than
# through `swift package generate-manual`, whose plugin first builds every product of
# the package again in debug.
man: | $(RELEASE)/reachability-full
	$(SWIFT_RELEASE) --product generate-manual
	rm -rf $(MANPAGES) && mkdir -p $(MANPAGES)
	$(RELEASE)/generate-manual $(RELEASE)/reachability-full --multi-page --output-directory $(MANPAGES)
	python3 Scripts/finish-man-pages.py $(MANPAGES)

$(MANPAGES)/reachability.1: $(RELEASE)/reachability-full Scripts/finish-man-pages.py
	$(MAKE) --no-print-directory man

install: | $(RELEASE)/reachability $(RELEASE)/reachability-full $(MANPAGES)/reachability.1
	install -d $(BINDIR) $(LIBEXECDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR) $(UNITDIR) $(RULESDIR)
	$(INSTALL_PROGRAM) $(RELEASE)/reachability $(BINDIR)/reachability
	$(INSTALL_PROGRAM) $(RELEASE)/reachability-full $(LIBEXECDIR)/reachability-full
	install -m 644 $(MANPAGES)/*.1 $(MANDIR)/
	$(RELEASE)/reachability --generate-completion-script bash | sed '1{/^#!/d}' > $(BASHDIR)/reachability
	$(RELEASE)/reachability --generate-completion-script zsh > $(ZSHDIR)/_reachability
	$(RELEASE)/reachability --generate-completion-script fish > $(FISHDIR)/reachability.fish
	for unit in $(UNITS); do \
		sed 's|/usr/local/bin/reachability|$(PREFIX)/bin/reachability|' Packaging/systemd/$$unit >$(UNITDIR)/$$unit && \
		chmod 644 $(UNITDIR)/$$unit || exit 1; \
	done
	install -m 644 Packaging/prometheus/reachability.rules.yml $(RULESDIR)/

uninstall:
	rm -f $(BINDIR)/reachability $(LIBEXECDIR)/reachability-full \
		$(MANDIR)/reachability.1 $(MANDIR)/reachability.*.1 \
		$(BASHDIR)/reachability $(ZSHDIR)/_reachability $(FISHDIR)/reachability.fish \
		$(addprefix $(UNITDIR)/,$(UNITS)) $(RULESDIR)/reachability.rules.yml
	-rmdir $(LIBEXECDIR) $(RULESDIR) $(DESTDIR)$(PREFIX)/share/reachability 2>/dev/null

# A Debian package of what `make install PREFIX=/usr` installs, with the copyright and
# changelog Debian asks for and the shared libraries the executables load as
# dependencies (libmnl0 among them), and the maintainer scripts of Packaging/debian. The
# units are installed, not enabled (docs/OPERATIONS.md, "The Debian package"). Needs dpkg-deb
# (dpkg); check it with lintian.
deb:
	rm -rf $(SCRATCH)/deb && mkdir -p $(DEB_ROOT)/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(abspath $(DEB_ROOT)) PREFIX=/usr
	Packaging/debian/make-deb.sh $(DEB_ROOT) $(VERSION) $(DEB_ARCH) $(DEB)
