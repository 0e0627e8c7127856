# ipnd: `make run` and `make test` are the whole set-up on a Debian machine with Swift.

SWIFT ?= swift
CONFIG ?= config/ipnd.dev.yaml
# sqlite3 (the CLI) is for looking into the store, as the README does; python3 and openssl
# drive the tests' independent clients and the crash test.
SYSTEM_PACKAGES := libssl-dev libsqlite3-dev pkg-config sqlite3 python3 openssl

.PHONY: all deps build release deb run test test-stress test-alert-rules pg-start pg-stop check-config bench bench-console profile clean fuzz fuzz-replay crash-test test-sanitizers

all: build

deps:
	@scripts/install-system-packages.sh $(SYSTEM_PACKAGES)

build: deps
	$(SWIFT) build

# The production binary (.build/release/ipnd): optimised, with the Swift runtime and Foundation
# linked in, so the server needs no Swift toolchain, and ~6 MB less resident memory than
# loading them as shared libraries (docs/benchmarks.md, "Memory"). scripts/build-release.sh
# holds the flags make bench and make profile build with too.
release: deps
	scripts/build-release.sh ipnd

# The Debian package (deploy/README.md): the release build packed by scripts/build-deb.sh as
# ipnd_<version>_<arch>.deb in this directory, the version being `ipnd --version`'s, and checked
# by lintian. dpkg-dev brings dpkg-shlibdeps (Depends, from what the binary links), binutils
# strip; man-db renders the man page for make test's checks.
DEB_PACKAGES := dpkg-dev lintian binutils man-db

deb: deps
	@scripts/install-system-packages.sh $(DEB_PACKAGES)
	bin=$$(scripts/build-release.sh ipnd) && scripts/build-deb.sh "$$bin/ipnd" .

# Git keeps no permission bits but the executable one: the dev config holds (fake) secrets
# inline, and ipnd refuses secrets that others (the world) can read; a checkout's 0644 would be
# refused. The dev config keeps its store in var/, which git does not keep either: serve makes it.
run: build
	chmod 600 $(CONFIG)
	.build/debug/ipnd serve --config $(CONFIG)

check-config: build
	chmod 600 $(CONFIG)
	.build/debug/ipnd check-config --config $(CONFIG)

# scripts/check-doc-references.sh fails, naming file and line, on a Markdown file a tracked file
# names that the repository does not hold (its self-test first shows it can fail);
# scripts/spdx-headers.sh --check fails on a source file without its licence header.
# Before the suite, scripts/test-deb.sh builds the Debian package as make deb does, from the
# debug build linked with the Swift runtime (a release build would add 10+ minutes), checks it
# with dpkg-deb and lintian, and installs, upgrades, removes and purges it in a throwaway root.
# The tests also run `systemd-analyze verify` on deploy/ipnd.service. scripts/swift-test.sh
# repeats what failed at the end of the output, where CI's tail of the log shows it. The
# console's browser test leaves its screenshots (every page at 1280 and 360 px) in
# $(IPND_TEST_ARTIFACTS)/console, .build/test-artifacts/console unless set.
# The PostgreSQL store's tests need a server: scripts/pg-test-server.sh run starts a throwaway
# one (Debian's postgresql, a fresh cluster in /tmp/ipndpg.XXXXXX on a unix socket and on
# 127.0.0.1 with TLS), hands its IPND_TEST_PG_* variables to the tests, and stops and removes
# it afterwards, whether they passed or not.
# tools/provider_double_selftest.py first checks the provider double the reconciliation tests ask
# (its own independent clients against each status API of docs/providers.md, a few seconds).
# chromium and chromium-driver: the console's browser test (tools/console_browser_test.py,
# Selenium) drives Debian's headless Chromium; its screenshots need a font.
TEST_PACKAGES := systemd postgresql chromium chromium-driver fonts-dejavu-core

IPND_TEST_ARTIFACTS ?= $(CURDIR)/.build/test-artifacts

test: deps
	scripts/check-ignored-sources.sh
	scripts/check-doc-references.sh --self-test
	scripts/check-doc-references.sh
	scripts/spdx-headers.sh --check
	@scripts/install-system-packages.sh $(TEST_PACKAGES) $(DEB_PACKAGES)
	@scripts/install-python-packages.sh
	chmod 600 config/ipnd.dev.yaml
	python3 tools/provider_double_selftest.py
	scripts/test-alert-rules.sh
	$(SWIFT) build --build-tests
	scripts/test-deb.sh
	rm -rf "$(IPND_TEST_ARTIFACTS)/console"
	IPND_TEST_ARTIFACTS="$(IPND_TEST_ARTIFACTS)" SWIFT=$(SWIFT) \
		scripts/pg-test-server.sh run scripts/with-tmpdir.sh scripts/swift-test.sh --skip-build

# The suite as a busy machine runs it: BUSY (2) processes take the CPU meanwhile, as other jobs
# do on a shared CI runner (scripts/with-busy-cpus.sh prints how long it took). The tests must
# pass so too: they wait for outcomes, never for time, and move the daemons' clocks.
BUSY ?= 2
test-stress:
	scripts/with-busy-cpus.sh $(BUSY) $(MAKE) test

# The alerting rules (deploy/prometheus/ipnd.rules.yml): `promtool check rules`, then `promtool
# test rules` on their tests. promtool is Debian's prometheus package; the script installs it when
# missing and leaves no Prometheus server running. make test runs it before the suite.
test-alert-rules:
	scripts/test-alert-rules.sh

# The same server for a developer's own `swift test --filter ...` or editor: start it, load its
# variables into the shell, run tests as often as wanted, stop it:
#   eval "$(make -s pg-start)"    (PG_DIR: where it lives; keep the path short, it holds the socket)
#   make pg-stop
PG_DIR ?= /tmp/ipndpg-dev.$(shell id -u)
pg-start:
	@scripts/pg-test-server.sh start $(PG_DIR) --tcp
	@scripts/pg-test-server.sh env $(PG_DIR)

pg-stop:
	@scripts/pg-test-server.sh stop $(PG_DIR)
	@rm -rf $(PG_DIR)

# The whole suite under ThreadSanitizer, then AddressSanitizer (.build-tsan, .build-asan);
# fails on a failed test or on any sanitizer report. SANITIZERS="thread" runs one. Both runs
# share one throwaway PostgreSQL, as make test does.
SANITIZERS ?= thread address
test-sanitizers: deps
	@scripts/install-system-packages.sh $(TEST_PACKAGES)
	@scripts/install-python-packages.sh
	chmod 600 config/ipnd.dev.yaml
	scripts/pg-test-server.sh run scripts/test-sanitizers.sh $(SANITIZERS)

# kill -9 the daemon at random moments under load, 20 times (make test runs a 4-kill form).
KILLS ?= 20
crash-test: build
	python3 tools/crash_test.py --binary .build/debug/ipnd --kills $(KILLS)

# libFuzzer targets (scripts/fuzz.sh): every provider, the config loader, the amount parser.
# `make fuzz SECONDS=600` fuzzes each for SECONDS, two at a time, and prints a summary.
SECONDS ?= 60
fuzz: deps
	scripts/fuzz.sh run $(SECONDS)

fuzz-replay: deps
	scripts/fuzz.sh replay

clean:
	rm -rf .build .build-fuzz .build-tsan .build-asan var ipnd_*.deb

# The load benchmark (issue 6): release build, 500k signed notifications, wrk, figures printed;
# then the console's pages on a seeded store (CONSOLE=0 skips that pass).
# STORE=postgres: the same on a private PostgreSQL server, one node then two (scripts/bench-postgres.sh).
STORE ?= sqlite
bench: deps
	@if [ "$(STORE)" = postgres ]; then scripts/bench-postgres.sh; else scripts/bench.sh; fi

# The console's page timings alone (issue 32): a store of 1,000,000 notifications and 200,000
# orders seeded by direct SQL, p50/p99 per page. CONSOLE_STORE=PATH measures an existing seeded store.
bench-console: deps
	scripts/bench-console.sh

# Instructions per notification and per /healthz request under valgrind's callgrind, and where
# they go: the repeatable figure for comparing two builds (docs/benchmarks.md, "Fourth round").
profile: deps
	scripts/profile.sh
