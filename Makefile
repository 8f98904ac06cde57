# Builds and installs the `reachability` command, its man pages, shell completions
# and the wait-online systemd unit.
#
#   make                       # release build, Swift runtime linked in statically
#   sudo make install          # into /usr/local (PREFIX=/usr, DESTDIR=… for packaging)
#   sudo make uninstall
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
RELEASE = .build/release
MANPAGES = .build/man

.PHONY: all build man install uninstall

all: build

build:
	swift build -c release --product reachability --static-swift-stdlib
	swift build -c release --product reachability-full --static-swift-stdlib

# swift-argument-parser's generate-manual tool (what its plugin runs): a page per
# subcommand, from the release build of the full command. Run directly rather than
# through `swift package generate-manual`, whose plugin first builds every product of
# the package again in debug.
man: build
	swift build -c release --product generate-manual --static-swift-stdlib
	rm -rf $(MANPAGES) && mkdir -p $(MANPAGES)
	$(RELEASE)/generate-manual $(RELEASE)/reachability-full --multi-page --output-directory $(MANPAGES)

install: build man
	install -d $(BINDIR) $(LIBEXECDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR) $(UNITDIR)
	$(INSTALL_PROGRAM) $(RELEASE)/reachability $(BINDIR)/reachability
	$(INSTALL_PROGRAM) $(RELEASE)/reachability-full $(LIBEXECDIR)/reachability-full
	install -m 644 $(MANPAGES)/*.1 $(MANDIR)/
	$(RELEASE)/reachability --generate-completion-script bash > $(BASHDIR)/reachability
	$(RELEASE)/reachability --generate-completion-script zsh > $(ZSHDIR)/_reachability
	$(RELEASE)/reachability --generate-completion-script fish > $(FISHDIR)/reachability.fish
	sed 's|/usr/local/bin/reachability|$(PREFIX)/bin/reachability|' \
		Packaging/systemd/reachability-wait-online.service > $(UNITDIR)/reachability-wait-online.service
	chmod 644 $(UNITDIR)/reachability-wait-online.service

uninstall:
	rm -f $(BINDIR)/reachability $(LIBEXECDIR)/reachability-full \
		$(MANDIR)/reachability.1 $(MANDIR)/reachability.*.1 \
		$(BASHDIR)/reachability $(ZSHDIR)/_reachability $(FISHDIR)/reachability.fish \
		$(UNITDIR)/reachability-wait-online.service
	-rmdir $(LIBEXECDIR) 2>/dev/null
