# Builds and installs the `reachability` command, its man pages, shell completions
# and the wait-online systemd unit.
#
#   make                       # release build, Swift runtime linked in statically
#   sudo make install          # into /usr/local (PREFIX=/usr, DESTDIR=… for packaging)
#   sudo make uninstall
#
# Nothing here needs root but writing into PREFIX.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(DESTDIR)$(PREFIX)/bin
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
UNITDIR = $(DESTDIR)$(PREFIX)/lib/systemd/system
BINARY = .build/release/reachability
MANPAGES = .build/plugins/GenerateManual/outputs/ReachabilityCLI

.PHONY: all build man install uninstall

all: build

build:
	swift build -c release --product reachability --static-swift-stdlib

# swift-argument-parser's generate-manual plugin: a page per subcommand (from a debug
# build of the same command, whose help is the same).
man:
	swift package generate-manual --configuration debug --multi-page

install: build man
	install -d $(BINDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR) $(UNITDIR)
	install -m 755 $(BINARY) $(BINDIR)/reachability
	install -m 644 $(MANPAGES)/*.1 $(MANDIR)/
	$(BINARY) --generate-completion-script bash > $(BASHDIR)/reachability
	$(BINARY) --generate-completion-script zsh > $(ZSHDIR)/_reachability
	$(BINARY) --generate-completion-script fish > $(FISHDIR)/reachability.fish
	sed 's|/usr/local/bin/reachability|$(PREFIX)/bin/reachability|' \
		Packaging/systemd/reachability-wait-online.service > $(UNITDIR)/reachability-wait-online.service
	chmod 644 $(UNITDIR)/reachability-wait-online.service

uninstall:
	rm -f $(BINDIR)/reachability $(MANDIR)/reachability.1 $(MANDIR)/reachability.*.1 \
		$(BASHDIR)/reachability $(ZSHDIR)/_reachability $(FISHDIR)/reachability.fish \
		$(UNITDIR)/reachability-wait-online.service
