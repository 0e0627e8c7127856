# ipnd: `make run` and `make test` are the whole set-up on a Debian machine with Swift.

SWIFT ?= swift
CONFIG ?= config/ipnd.dev.yaml
# sqlite3 (the CLI) is for looking into the store, as the README does.
SYSTEM_PACKAGES := libssl-dev libsqlite3-dev pkg-config sqlite3

.PHONY: all deps build run test check-config bench clean

all: build

deps:
	@scripts/install-system-packages.sh $(SYSTEM_PACKAGES)

build: deps
	$(SWIFT) build

# Git keeps no permission bits but the executable one: the dev config holds (fake) secrets
# inline, and ipnd refuses secrets that group or others can read. The dev config keeps its
# store in var/, which git does not keep either.
run: build
	chmod 600 $(CONFIG)
	mkdir -p var
	.build/debug/ipnd serve --config $(CONFIG)

check-config: build
	chmod 600 $(CONFIG)
	.build/debug/ipnd check-config --config $(CONFIG)

test: deps
	chmod 600 config/ipnd.dev.yaml
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

clean:
	rm -rf .build var

# The load benchmark (issue 6): release build, 200k signed notifications, wrk, figures printed.
bench: deps
	scripts/bench.sh
